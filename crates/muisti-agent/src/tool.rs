//! Tools the model may call.

use std::{fmt, sync::Arc};

use serde_json::Value;

use crate::ToolSpec;

type Handler = dyn Fn(&Value) -> Result<String, String> + Send + Sync;

/// A tool: what the model is told about it, and the function that runs it. The function
/// gets the arguments object and returns the result text, or an error text the model is
/// shown instead.
#[derive(Clone)]
pub struct Tool {
    spec: ToolSpec,
    handler: Arc<Handler>,
}

impl fmt::Debug for Tool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tool").field("spec", &self.spec).finish()
    }
}

impl Tool {
    /// A tool named `name`; `parameters` is the JSON Schema of its arguments object.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        parameters: Value,
        handler: impl Fn(&Value) -> Result<String, String> + Send + Sync + 'static,
    ) -> Self {
        Self {
            spec: ToolSpec {
                name: name.into(),
                description: description.into(),
                parameters,
            },
            handler: Arc::new(handler),
        }
    }

    /// What the model is told.
    pub fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    /// Runs the tool.
    pub fn call(&self, arguments: &Value) -> Result<String, String> {
        (self.handler)(arguments)
    }
}

//! Reading a model's structured answers: the one way the judge and the extractor read JSON
//! from a model, and name the model in logs.

use serde::de::DeserializeOwned;

use crate::Provider;

/// The first JSON object in a model's answer, as `T` (code fences and words around it are
/// allowed); the reason when there is none or it does not fit `T`.
pub(crate) fn first_json_object<T: DeserializeOwned>(text: &str) -> Result<T, String> {
    let start = text.find('{').ok_or("no JSON object")?;
    serde_json::Deserializer::from_str(&text[start..])
        .into_iter::<T>()
        .next()
        .ok_or("no JSON object")?
        .map_err(|e| e.to_string())
}

/// A model as logs name it: `provider:model`.
pub(crate) fn model_label(provider: &dyn Provider) -> String {
    format!("{}:{}", provider.name(), provider.model())
}

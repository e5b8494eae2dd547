//! What only the server side of `--server URL` does differently: a reindex runs there as a
//! job, which this polls. (The memory and key-value commands run on
//! [`backend::Remote`](crate::backend::Remote).)

use std::{io::Write, process::ExitCode};

use anyhow::{Result, bail};
use muisti_client::Client;

use crate::print_json;

/// Starts a reindex on the server and waits for it to finish.
pub(crate) fn reindex(client: &Client, force: bool, json: bool) -> Result<ExitCode> {
    let mut job = client.reindex(force)?;
    while job.state == "running" {
        std::thread::sleep(std::time::Duration::from_millis(200));
        job = client.job(&job.id)?;
    }
    if job.state != "done" {
        bail!(
            "reindex failed: {}",
            job.error.as_deref().unwrap_or("no reason given")
        );
    }
    if json {
        print_json(&job)?;
    } else {
        outln!("re-embedded up to {} memories", job.total)?;
    }
    Ok(ExitCode::SUCCESS)
}

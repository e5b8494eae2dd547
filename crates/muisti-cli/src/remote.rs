//! What only the server side of `--server URL` does differently: a reindex runs there as a
//! job, which this polls. (The memory and key-value commands run on
//! [`backend::Remote`](crate::backend::Remote).)

use std::{io::Write, process::ExitCode};

use anyhow::{Result, bail};
use muisti_client::Client;

use crate::print_json;

/// Polls a server's job until it is no longer running, telling `progress` its items done
/// of how many on the way.
pub(crate) fn wait_for(
    client: &Client,
    mut job: muisti_client::Job,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<muisti_client::Job> {
    while job.state == "running" {
        progress(job.done, job.total);
        std::thread::sleep(std::time::Duration::from_millis(100));
        job = client.job(&job.id)?;
    }
    Ok(job)
}

/// Starts a reindex on the server and waits for it to finish.
pub(crate) fn reindex(client: &Client, force: bool, json: bool) -> Result<ExitCode> {
    let job = wait_for(client, client.reindex(force)?, &mut |_, _| {})?;
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

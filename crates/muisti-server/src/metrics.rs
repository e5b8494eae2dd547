//! Request counters and latency histograms in the Prometheus text format.

use std::{
    collections::BTreeMap,
    fmt::Write,
    sync::{
        Mutex,
        atomic::{AtomicI64, Ordering},
    },
    time::Duration,
};

const BUCKETS: [f64; 14] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// What is kept per method and route: requests by status and a latency histogram.
#[derive(Default)]
struct Route {
    by_status: BTreeMap<u16, u64>,
    buckets: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

/// The server's metrics.
#[derive(Default)]
pub struct Metrics {
    /// By route template, then method.
    routes: Mutex<BTreeMap<String, BTreeMap<String, Route>>>,
    in_flight: AtomicI64,
    /// Records maintenance changed, by job (dry runs not counted).
    maintained: Mutex<BTreeMap<&'static str, u64>>,
    /// Maintenance runs, by how they were started (`request`, `schedule`).
    maintenance_runs: Mutex<BTreeMap<&'static str, u64>>,
    /// Model use by operation (`extract`, `manage`, `proxy`): calls, input and output
    /// tokens.
    model: Mutex<BTreeMap<&'static str, [u64; 3]>>,
    /// Facts extraction decided, by event (`ADD`, `UPDATE`, ...).
    facts: Mutex<BTreeMap<String, u64>>,
}

/// Escapes a label value.
fn label(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

impl Metrics {
    /// A request started.
    pub fn started(&self) {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
    }

    /// A request finished: `route` is the matched route template (or one label for every
    /// unmatched path), never the raw path; an unknown method counts as `OTHER`. Every label
    /// set is bounded: routes by the router, methods by [`method_label`], statuses by HTTP.
    pub fn finished(&self, method: &str, route: &str, status: u16, took: Duration) {
        self.in_flight.fetch_sub(1, Ordering::Relaxed);
        let method = method_label(method);
        let status = if (100..=599).contains(&status) {
            status
        } else {
            0
        };
        let Ok(mut routes) = self.routes.lock() else {
            return;
        };
        // Look up by reference: keys are allocated only for a route not seen before.
        if !routes.contains_key(route) {
            routes.insert(route.to_owned(), BTreeMap::new());
        }
        let Some(methods) = routes.get_mut(route) else {
            return;
        };
        if !methods.contains_key(method) {
            methods.insert(method.to_owned(), Route::default());
        }
        let Some(r) = methods.get_mut(method) else {
            return;
        };
        *r.by_status.entry(status).or_default() += 1;
        let secs = took.as_secs_f64();
        for (i, b) in BUCKETS.iter().enumerate() {
            if secs <= *b {
                r.buckets[i] += 1;
            }
        }
        r.count += 1;
        r.sum += secs;
    }

    /// Counts a maintenance run (started by `how`) and what its jobs changed.
    pub fn maintenance(&self, how: &'static str, changed: &[(&'static str, u64)]) {
        if let Ok(mut runs) = self.maintenance_runs.lock() {
            *runs.entry(how).or_default() += 1;
        }
        if let Ok(mut by_job) = self.maintained.lock() {
            for (job, n) in changed {
                *by_job.entry(job).or_default() += n;
            }
        }
    }

    /// Counts the model calls and tokens one `operation` used.
    pub fn model_usage(&self, operation: &'static str, calls: u64, input: u64, output: u64) {
        if let Ok(mut by_op) = self.model.lock() {
            let row = by_op.entry(operation).or_default();
            row[0] += calls;
            row[1] += input;
            row[2] += output;
        }
    }

    /// Counts what an extraction decided, fact by fact.
    pub fn facts<'a>(&self, events: impl IntoIterator<Item = &'a str>) {
        if let Ok(mut by_event) = self.facts.lock() {
            for e in events {
                // Only the engine's own event names: the label set stays bounded.
                let e = match e {
                    "ADD" | "UPDATE" | "DELETE" | "NONE" | "CONFIRMATION_REQUIRED" => e,
                    _ => "OTHER",
                };
                *by_event.entry(e.to_owned()).or_default() += 1;
            }
        }
    }

    /// The text exposition.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "# HELP muisti_http_requests_total HTTP requests by method, route and status.\n# TYPE muisti_http_requests_total counter"
        );
        let Ok(routes) = self.routes.lock() else {
            return out;
        };
        let rows = || {
            routes.iter().flat_map(|(route, methods)| {
                methods
                    .iter()
                    .map(move |(m, r)| (label(m), label(route), r))
            })
        };
        for (m, route, r) in rows() {
            for (status, n) in &r.by_status {
                let _ = writeln!(
                    out,
                    "muisti_http_requests_total{{method=\"{m}\",route=\"{route}\",status=\"{status}\"}} {n}"
                );
            }
        }
        let _ = writeln!(
            out,
            "# HELP muisti_http_request_duration_seconds HTTP request latency.\n# TYPE muisti_http_request_duration_seconds histogram"
        );
        for (m, route, r) in rows() {
            for (i, b) in BUCKETS.iter().enumerate() {
                let _ = writeln!(
                    out,
                    "muisti_http_request_duration_seconds_bucket{{method=\"{m}\",route=\"{route}\",le=\"{b}\"}} {}",
                    r.buckets[i]
                );
            }
            let _ = writeln!(
                out,
                "muisti_http_request_duration_seconds_bucket{{method=\"{m}\",route=\"{route}\",le=\"+Inf\"}} {}\nmuisti_http_request_duration_seconds_sum{{method=\"{m}\",route=\"{route}\"}} {}\nmuisti_http_request_duration_seconds_count{{method=\"{m}\",route=\"{route}\"}} {}",
                r.count, r.sum, r.count
            );
        }
        let _ = writeln!(
            out,
            "# HELP muisti_http_requests_in_flight Requests being served.\n# TYPE muisti_http_requests_in_flight gauge\nmuisti_http_requests_in_flight {}",
            self.in_flight.load(Ordering::Relaxed)
        );
        let _ = writeln!(
            out,
            "# HELP muisti_maintenance_runs_total Maintenance runs, by how they started.\n# TYPE muisti_maintenance_runs_total counter"
        );
        if let Ok(runs) = self.maintenance_runs.lock() {
            for (how, n) in runs.iter() {
                let _ = writeln!(
                    out,
                    "muisti_maintenance_runs_total{{trigger=\"{how}\"}} {n}"
                );
            }
        }
        let _ = writeln!(
            out,
            "# HELP muisti_maintained_records_total Records maintenance changed, by job.\n# TYPE muisti_maintained_records_total counter"
        );
        if let Ok(by_job) = self.maintained.lock() {
            for (job, n) in by_job.iter() {
                let _ = writeln!(out, "muisti_maintained_records_total{{job=\"{job}\"}} {n}");
            }
        }
        let _ = writeln!(
            out,
            "# HELP muisti_model_calls_total Model calls, by operation.\n# TYPE muisti_model_calls_total counter"
        );
        let model = self.model.lock().map(|m| m.clone()).unwrap_or_default();
        for (op, [calls, _, _]) in &model {
            let _ = writeln!(
                out,
                "muisti_model_calls_total{{operation=\"{op}\"}} {calls}"
            );
        }
        let _ = writeln!(
            out,
            "# HELP muisti_model_tokens_total Model tokens, by operation and kind.\n# TYPE muisti_model_tokens_total counter"
        );
        for (op, [_, input, output]) in &model {
            let _ = writeln!(
                out,
                "muisti_model_tokens_total{{operation=\"{op}\",kind=\"input\"}} {input}\nmuisti_model_tokens_total{{operation=\"{op}\",kind=\"output\"}} {output}"
            );
        }
        let _ = writeln!(
            out,
            "# HELP muisti_extracted_facts_total Facts extraction decided, by event.\n# TYPE muisti_extracted_facts_total counter"
        );
        if let Ok(by_event) = self.facts.lock() {
            for (event, n) in by_event.iter() {
                let _ = writeln!(out, "muisti_extracted_facts_total{{event=\"{event}\"}} {n}");
            }
        }
        out
    }
}

/// The method as a metrics label: a standard method, or `OTHER` for anything made up.
pub fn method_label(method: &str) -> &'static str {
    const KNOWN: [&str; 9] = [
        "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT",
    ];
    KNOWN
        .iter()
        .find(|k| **k == method)
        .copied()
        .unwrap_or("OTHER")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counters_and_cumulative_buckets() {
        let m = Metrics::default();
        m.started();
        m.finished("GET", "/v1/memories/{id}", 200, Duration::from_millis(2));
        m.started();
        m.finished("GET", "/v1/memories/{id}", 404, Duration::from_millis(20));
        let text = m.render();
        assert!(text.contains(
            "muisti_http_requests_total{method=\"GET\",route=\"/v1/memories/{id}\",status=\"404\"} 1"
        ));
        assert!(text.contains("le=\"0.0025\"} 1"));
        assert!(text.contains("le=\"0.025\"} 2"));
        assert!(text.contains("muisti_http_requests_in_flight 0"));
    }

    #[test]
    fn made_up_methods_share_one_label() {
        let m = Metrics::default();
        let before = {
            m.started();
            m.finished("GET", "unmatched", 404, Duration::from_millis(1));
            m.render().len()
        };
        for i in 0..2_000 {
            m.started();
            m.finished(
                &format!("M{i:06}X"),
                "unmatched",
                400,
                Duration::from_millis(1),
            );
        }
        let text = m.render();
        assert!(text.contains("method=\"OTHER\""), "{text}");
        assert!(!text.contains("M000001X"));
        assert!(
            text.len() < before * 3,
            "{} bytes after 2,000 methods",
            text.len()
        );
    }
}

//! `muisti bench store`: throughput and latency of the storage contract on each backend.

use super::*;

#[derive(Serialize)]
pub(super) struct Measure {
    backend: String,
    workload: &'static str,
    ops: usize,
    ops_per_s: f64,
    p50_us: f64,
    p99_us: f64,
}

pub(super) fn print_row(m: &Measure) -> Result<()> {
    outln!(
        "{:<8} {:<22} {:>8} ops {:>12.0} ops/s   p50 {:>8.1} µs   p99 {:>8.1} µs",
        m.backend,
        m.workload,
        m.ops,
        m.ops_per_s,
        m.p50_us,
        m.p99_us
    )?;
    Ok(())
}

pub(super) fn text(i: usize) -> String {
    format!(
        "memory number {i}: the user mentioned a preference for window seats and green tea, item {}",
        i * 7919 % 10_007
    )
}

/// A fixed permutation of 0..n (xorshift), so reads are in a random but repeatable order.
pub(super) fn shuffled(n: usize) -> Vec<usize> {
    let mut v: Vec<usize> = (0..n).collect();
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for i in (1..n).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.swap(i, (x % (i as u64 + 1)) as usize);
    }
    v
}

pub(super) fn summarize(
    backend: &str,
    workload: &'static str,
    total: Duration,
    mut lat: Vec<Duration>,
) -> Measure {
    lat.sort_unstable();
    let pct = |p: f64| {
        lat.get(((lat.len() as f64 - 1.0) * p).round() as usize)
            .map_or(0.0, |d| d.as_secs_f64() * 1e6)
    };
    Measure {
        backend: backend.to_owned(),
        workload,
        ops: lat.len(),
        ops_per_s: lat.len() as f64 / total.as_secs_f64(),
        p50_us: pct(0.5),
        p99_us: pct(0.99),
    }
}

pub(super) fn bench_store(
    store: &dyn Store,
    name: &str,
    n: usize,
    singles: usize,
) -> Result<Vec<Measure>> {
    let single_ns = Partition::of(Namespace::new("bench-set")?);
    let batch_ns = Partition::of(Namespace::new("bench-batch")?);
    let mut out = Vec::new();

    // Single writes, one transaction each.
    let mut lat = Vec::with_capacity(singles);
    let start = Instant::now();
    for i in 0..singles {
        let t = Instant::now();
        store.put(Put::new(
            single_ns.clone(),
            Some(Key::new(format!("k{i}"))?),
            text(i),
        ))?;
        lat.push(t.elapsed());
    }
    out.push(summarize(name, "set (1 per tx)", start.elapsed(), lat));

    // Batched stores: 1,000 per transaction.
    let mut ids: Vec<MemoryId> = Vec::with_capacity(n);
    let mut lat = Vec::new();
    let start = Instant::now();
    for chunk_start in (0..n).step_by(1000) {
        let end = (chunk_start + 1000).min(n);
        let puts = (chunk_start..end)
            .map(|i| {
                Ok(Put::new(
                    batch_ns.clone(),
                    Some(Key::new(format!("k{i}"))?),
                    text(i),
                ))
            })
            .collect::<Result<Vec<_>>>()?;
        let t = Instant::now();
        let written = store.put_many(puts)?;
        let per = t.elapsed() / written.len().max(1) as u32;
        lat.extend(std::iter::repeat_n(per, written.len()));
        ids.extend(written.iter().map(|w| w.memory.id));
    }
    out.push(summarize(name, "store (1000 per tx)", start.elapsed(), lat));

    // Gets by key, random order, one thread.
    let order = shuffled(n);
    let locators: Vec<Locator> = order
        .iter()
        .map(|i| {
            Ok(Locator::Key {
                partition: batch_ns.clone(),
                key: Key::new(format!("k{i}"))?,
            })
        })
        .collect::<Result<_>>()?;
    let mut lat = Vec::with_capacity(n);
    let start = Instant::now();
    for at in &locators {
        let t = Instant::now();
        let got = store.get(at)?;
        lat.push(t.elapsed());
        anyhow::ensure!(got.is_some(), "a stored record is missing");
    }
    out.push(summarize(name, "get by key", start.elapsed(), lat));

    // Gets by id.
    let tenant = batch_ns.tenant.clone();
    let by_id: Vec<Locator> = order
        .iter()
        .map(|&i| Locator::Id {
            tenant: tenant.clone(),
            id: ids[i],
        })
        .collect();
    let mut lat = Vec::with_capacity(n);
    let start = Instant::now();
    for at in &by_id {
        let t = Instant::now();
        let got = store.get(at)?;
        lat.push(t.elapsed());
        anyhow::ensure!(got.is_some(), "a stored record is missing");
    }
    out.push(summarize(name, "get by id", start.elapsed(), lat));

    store.flush(&single_ns)?;
    store.flush(&batch_ns)?;
    Ok(out)
}

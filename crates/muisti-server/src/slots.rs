//! Who holds the server's connections: at most `max_connections` in all and
//! `max_connections_per_peer` from one address, and a connection that has not sent a
//! request yet is the first to go: it is closed after the short `first_request_timeout`,
//! and when the server (or its peer's share) is full, a new connection takes the slot of the
//! oldest one that has not sent a request. One peer opening idle sockets therefore cannot
//! deny service to another, and a connection serving a request is never taken away.

use std::{
    collections::{BTreeMap, HashMap},
    net::IpAddr,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
};

use tokio_util::sync::CancellationToken;

/// Completes when the connection has sent no request `after` its start; never once it
/// has.
pub(crate) async fn unused_after(used: &AtomicBool, after: std::time::Duration) {
    tokio::time::sleep(after).await;
    if used.load(Ordering::Acquire) {
        std::future::pending::<()>().await;
    }
}

/// A connection's service: marks the connection used when its first request comes in.
#[derive(Clone)]
pub(crate) struct Marked<S> {
    inner: S,
    used: Arc<AtomicBool>,
}

impl<S> Marked<S> {
    pub(crate) fn new(inner: S, used: Arc<AtomicBool>) -> Self {
        Self { inner, used }
    }
}

impl<S, R> tower_service::Service<R> for Marked<S>
where
    S: tower_service::Service<R>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: R) -> Self::Future {
        self.used.store(true, Ordering::Release);
        self.inner.call(req)
    }
}

/// The connection slots of one server.
pub(crate) struct Slots {
    max: usize,
    per_peer: usize,
    held: Mutex<Held>,
}

#[derive(Default)]
struct Held {
    next: u64,
    /// By admission order, so the first unused one found is the oldest.
    conns: BTreeMap<u64, Holder>,
    by_peer: HashMap<IpAddr, usize>,
}

struct Holder {
    peer: IpAddr,
    used: Arc<AtomicBool>,
    evict: CancellationToken,
}

/// One admitted connection's slot, given back when dropped.
pub(crate) struct Slot {
    slots: Arc<Slots>,
    id: u64,
    /// Set once the connection's first request reached the server.
    pub(crate) used: Arc<AtomicBool>,
    /// Cancelled when another connection took this one's slot (it had sent no request).
    pub(crate) evicted: CancellationToken,
}

impl Drop for Slot {
    fn drop(&mut self) {
        if let Ok(mut held) = self.slots.held.lock() {
            held.remove(self.id);
        }
    }
}

impl Held {
    fn remove(&mut self, id: u64) -> Option<Holder> {
        let holder = self.conns.remove(&id)?;
        if let Some(n) = self.by_peer.get_mut(&holder.peer) {
            *n -= 1;
            if *n == 0 {
                self.by_peer.remove(&holder.peer);
            }
        }
        Some(holder)
    }

    /// Frees the slot of the oldest connection (of `peer`, when given) that has not sent a
    /// request; `false` when every one has.
    fn evict_unused(&mut self, peer: Option<IpAddr>) -> bool {
        let victim = self
            .conns
            .iter()
            .find(|(_, h)| peer.is_none_or(|p| h.peer == p) && !h.used.load(Ordering::Acquire))
            .map(|(&id, _)| id);
        match victim.and_then(|id| self.remove(id)) {
            Some(holder) => {
                holder.evict.cancel();
                true
            }
            None => false,
        }
    }
}

impl Slots {
    /// `max` connections in all, `per_peer` from one address.
    pub(crate) fn new(max: usize, per_peer: usize) -> Arc<Self> {
        Arc::new(Self {
            max,
            per_peer: per_peer.min(max),
            held: Mutex::new(Held::default()),
        })
    }

    /// A slot for a new connection from `peer`, or `None` (answer 503): when its peer's
    /// share or the whole server is full, the oldest connection (of that peer first) that
    /// has not sent a request is closed to make room; only connections that have all sent
    /// one make a new connection wait outside.
    pub(crate) fn admit(self: &Arc<Self>, peer: IpAddr) -> Option<Slot> {
        let mut held = self.held.lock().ok()?;
        if held.by_peer.get(&peer).copied().unwrap_or(0) >= self.per_peer
            && !held.evict_unused(Some(peer))
        {
            return None;
        }
        if held.conns.len() >= self.max && !held.evict_unused(None) {
            return None;
        }
        let id = held.next;
        held.next += 1;
        let used = Arc::new(AtomicBool::new(false));
        let evicted = CancellationToken::new();
        held.conns.insert(
            id,
            Holder {
                peer,
                used: Arc::clone(&used),
                evict: evicted.clone(),
            },
        );
        *held.by_peer.entry(peer).or_default() += 1;
        Some(Slot {
            slots: Arc::clone(self),
            id,
            used,
            evicted,
        })
    }

    /// Connections held now.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.held.lock().map(|h| h.conns.len()).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([127, 0, 0, last])
    }

    #[test]
    fn one_peer_holds_at_most_its_share_and_an_unused_one_makes_room() {
        let slots = Slots::new(10, 3);
        let a: Vec<Slot> = (0..3).filter_map(|_| slots.admit(ip(2))).collect();
        assert_eq!(a.len(), 3);
        // A fourth from the same peer takes the oldest unused one's slot.
        let d = slots.admit(ip(2)).expect("room made");
        assert!(a[0].evicted.is_cancelled());
        assert!(!a[1].evicted.is_cancelled());
        assert_eq!(slots.len(), 3);
        // Once all of that peer's connections have sent a request, it gets no more.
        for s in a.iter().skip(1).chain([&d]) {
            s.used.store(true, Ordering::Release);
        }
        assert!(slots.admit(ip(2)).is_none());
        // Another peer still gets in.
        assert!(slots.admit(ip(1)).is_some());
    }

    #[test]
    fn a_full_server_closes_an_unused_connection_before_refusing() {
        let slots = Slots::new(4, 4);
        let idle: Vec<Slot> = (0..4).filter_map(|_| slots.admit(ip(2))).collect();
        let served = slots.admit(ip(1)).expect("an idle one gave its slot");
        assert!(idle[0].evicted.is_cancelled());
        served.used.store(true, Ordering::Release);
        for s in &idle[1..] {
            s.used.store(true, Ordering::Release);
        }
        assert!(slots.admit(ip(3)).is_none(), "every holder is serving");
        drop(served);
        assert!(
            slots.admit(ip(3)).is_some(),
            "a slot given back is free again"
        );
    }

    #[test]
    fn dropping_an_evicted_slot_frees_nothing_twice() {
        let slots = Slots::new(2, 2);
        let first = slots.admit(ip(2)).expect("first");
        let _second = slots.admit(ip(2)).expect("second");
        let _third = slots.admit(ip(2)).expect("third, in the first's slot");
        assert!(first.evicted.is_cancelled());
        drop(first);
        assert_eq!(slots.len(), 2);
    }
}

//! Connections per client address: one client (an IPv4 address, an IPv6
//! /64, as `pairing::address_group` groups them) may hold at most so many
//! at once, so idle sockets from one place cannot use up the server-wide
//! `max_connections` and shut everyone else out.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

/// The open connections of each address group.
#[derive(Debug)]
pub struct PerAddress {
    limit: usize,
    open: Mutex<HashMap<IpAddr, usize>>,
}

/// One connection counted against its address; released when dropped.
#[derive(Debug)]
pub struct Slot {
    owner: Arc<PerAddress>,
    group: IpAddr,
}

impl PerAddress {
    /// `wanted` connections per address, but at most half of the
    /// server-wide `cap` (one address never fills the server), at least 1.
    pub fn new(wanted: usize, cap: usize) -> Arc<PerAddress> {
        Arc::new(PerAddress {
            limit: wanted.min(cap / 2).max(1),
            open: Mutex::new(HashMap::new()),
        })
    }

    pub fn limit(&self) -> usize {
        self.limit
    }

    /// A slot for a connection from `addr`, or None when its group holds
    /// the limit already.
    pub fn try_open(self: &Arc<Self>, addr: IpAddr) -> Option<Slot> {
        let group = crate::pairing::address_group(addr.to_canonical());
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let n = open.entry(group).or_insert(0);
        if *n >= self.limit {
            return None;
        }
        *n += 1;
        Some(Slot {
            owner: self.clone(),
            group,
        })
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut open = self.owner.open.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = open.get_mut(&self.group) {
            *n -= 1;
            if *n == 0 {
                // Forgotten when empty: the map holds only addresses with
                // a connection open.
                open.remove(&self.group);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_address_gets_its_limit_and_a_closed_connection_frees_its_slot() {
        let p = PerAddress::new(2, 100);
        let a: IpAddr = "127.0.0.1".parse().unwrap();
        let b: IpAddr = "127.0.0.2".parse().unwrap();
        let first = p.try_open(a).unwrap();
        let _second = p.try_open(a).unwrap();
        assert!(p.try_open(a).is_none());
        assert!(p.try_open(b).is_some());
        drop(first);
        assert!(p.try_open(a).is_some());
        // One IPv6 /64 is one client.
        let x: IpAddr = "2001:db8:1:2::1".parse().unwrap();
        let y: IpAddr = "2001:db8:1:2:ffff::9".parse().unwrap();
        let _x = p.try_open(x).unwrap();
        let _y = p.try_open(y).unwrap();
        assert!(p.try_open("2001:db8:1:2::77".parse().unwrap()).is_none());
        assert!(p.try_open("2001:db8:1:3::1".parse().unwrap()).is_some());
        // Never more than half the server's connections.
        assert_eq!(PerAddress::new(512, 100).limit(), 50);
        assert_eq!(PerAddress::new(512, 1).limit(), 1);
    }
}

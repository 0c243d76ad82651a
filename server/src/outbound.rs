//! Where the server may be made to connect: the address rules shared by
//! every URL a request can name (Web Push endpoints, OAuth Client ID
//! Metadata Documents). Never loopback, private, link-local or otherwise
//! internal addresses unless an allow-list names exactly that address.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

/// Whether `pattern` (an allow-list entry; `*.` matches any subdomain)
/// matches `host`.
pub fn host_matches(pattern: &str, host: &str) -> bool {
    let (pattern, host) = (pattern.to_ascii_lowercase(), host.to_ascii_lowercase());
    match pattern.strip_prefix("*.") {
        Some(parent) => host.ends_with(&format!(".{parent}")),
        None => pattern == host,
    }
}

/// Whether `ip` is an address the server must not be made to call:
/// anything but a global unicast address. IPv4: loopback, private,
/// link-local, unspecified and "this network" (0/8), multicast, broadcast,
/// documentation, shared (100.64/10), IETF protocol assignments
/// (192.0.0/24), benchmarking (198.18/15) and reserved (240/4). IPv6:
/// everything outside global unicast (2000::/3: loopback, unspecified,
/// multicast, unique-local, link-local, site-local), documentation, and
/// the forms that carry an IPv4 address, judged by that address (mapped,
/// NAT64 64:ff9b::/96, 6to4 2002::/16); IPv4-compatible (::/96),
/// local-use NAT64 (64:ff9b:1::/48) and Teredo (2001::/32, its client
/// address hidden) are refused outright.
pub fn is_internal(ip: IpAddr) -> bool {
    match ip.to_canonical() {
        IpAddr::V4(v4) => is_internal_v4(v4),
        IpAddr::V6(v6) => {
            let s = v6.segments();
            let embedded = |hi: u16, lo: u16| {
                is_internal_v4(Ipv4Addr::new(
                    (hi >> 8) as u8,
                    hi as u8,
                    (lo >> 8) as u8,
                    lo as u8,
                ))
            };
            if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
                return embedded(s[6], s[7]); // NAT64, well-known prefix
            }
            if s[0] & 0xe000 != 0x2000 {
                // Not global unicast. IPv4-compatible (::a.b.c.d, deprecated)
                // is in ::/8 and internal with it.
                return true;
            }
            match (s[0], s[1]) {
                (0x2001, 0x0db8) => true,            // documentation
                (0x2001, 0x0000) => true,            // Teredo
                (0x2002, _) => embedded(s[1], s[2]), // 6to4
                _ => false,
            }
        }
    }
}

fn is_internal_v4(v4: Ipv4Addr) -> bool {
    let o = v4.octets();
    v4.is_loopback()
        || v4.is_private()
        || v4.is_link_local()
        || v4.is_unspecified()
        || v4.is_multicast()
        || v4.is_broadcast()
        || v4.is_documentation()
        || o[0] == 0
        || (o[0] == 100 && (o[1] & 0xc0) == 64)
        || (o[0] == 192 && o[1] == 0 && o[2] == 0)
        || (o[0] == 198 && (o[1] & 0xfe) == 18)
        || o[0] >= 240
}

/// Whether `host` (and `host:port`) is named exactly by the allow-list.
pub fn exactly_allowed(allow: &[String], host: &str, port: Option<u16>) -> bool {
    let with_port = port.map(|p| format!("{host}:{p}"));
    allow.iter().any(|a| {
        a.eq_ignore_ascii_case(host)
            || with_port
                .as_deref()
                .is_some_and(|w| a.eq_ignore_ascii_case(w))
    })
}

/// A name that always means this machine (`localhost`, `*.localhost`).
pub fn is_local_name(host: &str) -> bool {
    let h = host.trim_end_matches('.').to_ascii_lowercase();
    h == "localhost" || h.ends_with(".localhost")
}

/// Why a name's addresses may not be connected to.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    #[error("looking up {host} took too long")]
    Slow { host: String },
    #[error("cannot look up {host}: {source}")]
    Lookup {
        host: String,
        source: std::io::Error,
    },
    #[error("{host} has no address")]
    NoAddress { host: String },
    #[error("{host} resolves to a loopback, private or link-local address ({ip}); refused")]
    Internal { host: String, ip: IpAddr },
}

/// The addresses of `host` (a name, not a literal) to connect to, each
/// checked: one internal address refuses the whole name, unless
/// `internal_ok` (an operator named exactly this host). The caller connects
/// to these and no others (no second lookup to answer differently).
pub async fn resolve_checked(
    host: &str,
    port: u16,
    internal_ok: bool,
) -> Result<Vec<SocketAddr>, ResolveError> {
    let host_s = || host.to_string();
    let found: Vec<SocketAddr> = tokio::time::timeout(
        Duration::from_secs(3),
        tokio::net::lookup_host((host, port)),
    )
    .await
    .map_err(|_| ResolveError::Slow { host: host_s() })?
    .map_err(|source| ResolveError::Lookup {
        host: host_s(),
        source,
    })?
    .collect();
    if found.is_empty() {
        return Err(ResolveError::NoAddress { host: host_s() });
    }
    if !internal_ok {
        if let Some(bad) = found.iter().find(|a| is_internal(a.ip())) {
            return Err(ResolveError::Internal {
                host: host_s(),
                ip: bad.ip(),
            });
        }
    }
    Ok(found)
}

/// A resolver for an HTTP client that may only reach global addresses by
/// name: [`resolve_checked`] for every name it connects to, so what was
/// checked is what is connected to. (A literal address in a URL is not
/// looked up; the caller checks those before sending.)
#[derive(Debug, Clone, Copy, Default)]
pub struct GlobalOnly;

impl reqwest::dns::Resolve for GlobalOnly {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        Box::pin(async move {
            // The port is the URL's; reqwest sets it on what we return.
            let found = resolve_checked(name.as_str(), 0, false).await?;
            let addrs: reqwest::dns::Addrs = Box::new(found.into_iter());
            Ok(addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The IPv6 forms that carry an IPv4 address and the reserved IPv4
    /// ranges are refused like the plain ones. Literals only: no
    /// connection is made.
    #[test]
    fn only_global_unicast_addresses_may_be_called() {
        let internal = [
            "127.0.0.1",
            "10.0.0.1",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "0.1.2.3",
            "100.64.0.1",
            "192.0.0.8",
            "198.18.0.1",
            "198.19.255.255",
            "240.0.0.1",
            "255.255.255.255",
            "224.0.0.1",
            "192.0.2.1",
            "::1",
            "::",
            "fc00::1",
            "fd12::1",
            "fe80::1",
            "fec0::1",
            "ff02::1",
            "::ffff:10.0.0.1",
            "::10.0.0.1",
            "64:ff9b::a00:1",
            "64:ff9b:1::a00:1",
            "2002:a00:1::1",
            "2001:db8::1",
            "2001:0:4136:e378::1",
            "100::1",
        ];
        for a in internal {
            assert!(is_internal(a.parse().unwrap()), "{a} counted as global");
        }
        let global = [
            "93.184.216.34",
            "8.8.8.8",
            "2606:4700::6810:85e5",
            "2002:5db8:d822::1",
            "::ffff:93.184.216.34",
            "64:ff9b::5db8:d822",
        ];
        for a in global {
            assert!(!is_internal(a.parse().unwrap()), "{a} counted as internal");
        }
    }

    /// `localhost` is the hosts file's (no DNS server is asked).
    #[tokio::test]
    async fn a_name_resolving_to_loopback_is_refused_unless_named_exactly() {
        let e = resolve_checked("localhost", 443, false).await.unwrap_err();
        assert!(e.to_string().contains("loopback"), "{e}");
        let ok = resolve_checked("localhost", 443, true).await.unwrap();
        assert!(ok.iter().all(|a| a.ip().is_loopback() && a.port() == 443));
    }
}

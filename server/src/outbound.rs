//! Where the server may be made to connect: the address rules shared by
//! every URL a request can name (Web Push endpoints, OAuth Client ID
//! Metadata Documents). Never loopback, private, link-local or otherwise
//! internal addresses unless an allow-list names exactly that address.

use std::net::IpAddr;

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
/// loopback, private, link-local, unspecified, multicast, documentation,
/// shared or unique-local.
pub fn is_internal(ip: IpAddr) -> bool {
    match ip.to_canonical() {
        IpAddr::V4(v4) => {
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_multicast()
                || v4.is_broadcast()
                || v4.is_documentation()
                || (v4.octets()[0] == 100 && (v4.octets()[1] & 0xc0) == 64)
        }
        IpAddr::V6(v6) => {
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (v6.segments()[0] & 0xfe00) == 0xfc00
                || (v6.segments()[0] & 0xffc0) == 0xfe80
        }
    }
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

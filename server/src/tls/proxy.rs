//! The client's address behind a proxy: `X-Forwarded-For` is believed only
//! when the connection comes from a configured proxy, and then the right-most
//! address that is not itself a trusted proxy is the client (the entries to
//! its left were written by the client and prove nothing).

use std::net::{IpAddr, SocketAddr};

use axum::http::HeaderMap;
use ipnet::IpNet;

pub fn client_address(peer: SocketAddr, headers: &HeaderMap, trusted: &[IpNet]) -> SocketAddr {
    let is_trusted = |ip: &IpAddr| trusted.iter().any(|n| n.contains(ip));
    if !is_trusted(&peer.ip()) {
        return peer;
    }
    let hops: Vec<IpAddr> = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|h| h.trim().parse::<IpAddr>())
        .collect::<Result<_, _>>()
        .unwrap_or_default(); // a garbled header: the proxy's own address
    hops.into_iter()
        .rev()
        .find(|ip| !is_trusted(ip))
        .map_or(peer, |ip| SocketAddr::new(ip, 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(xff: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in xff {
            h.append("x-forwarded-for", v.parse().unwrap());
        }
        h
    }

    #[test]
    fn only_a_trusted_proxy_names_the_client() {
        let trusted: Vec<IpNet> = vec!["10.0.0.0/8".parse().unwrap()];
        let proxy: SocketAddr = "10.0.0.5:4000".parse().unwrap();
        let stranger: SocketAddr = "203.0.113.9:4000".parse().unwrap();
        let spoof = headers(&["198.51.100.1"]);
        assert_eq!(client_address(stranger, &spoof, &trusted), stranger);
        assert_eq!(
            client_address(proxy, &spoof, &trusted).ip().to_string(),
            "198.51.100.1"
        );
        // The client's own claim sits to the left; the proxy appended the truth.
        let chain = headers(&["6.6.6.6, 198.51.100.1", "10.0.0.2"]);
        assert_eq!(
            client_address(proxy, &chain, &trusted).ip().to_string(),
            "198.51.100.1"
        );
        assert_eq!(
            client_address(proxy, &headers(&["garbage"]), &trusted),
            proxy
        );
        assert_eq!(client_address(proxy, &HeaderMap::new(), &trusted), proxy);
        assert_eq!(client_address(proxy, &spoof, &[]), proxy);
    }
}

//! PostgreSQL URLs: what the driver reads (`driver_url`), whether it can
//! read one (`check_url`, errors that never quote it), and how one is shown
//! (`redacted`: never its password).

/// Seconds to wait for PostgreSQL to accept a connection, unless the URL
/// says (`connect_timeout=`).
pub const DEFAULT_CONNECT_TIMEOUT_SECS: u64 = 5;

/// The URL the driver reads, and the `sslrootcert` path taken out of it.
pub fn driver_url(url: &str) -> (String, Option<String>) {
    let (base, query) = split_query(url);
    let mut root_cert = None;
    let mut kept = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=') {
            Some(("sslrootcert", path)) => root_cert = Some(path.to_string()),
            Some(("sslmode", "verify-full" | "verify-ca")) => kept.push("sslmode=require".into()),
            _ => kept.push(pair.to_string()),
        }
    }
    // A database host that does not answer at all (a partition) must not
    // hold a database thread for the system's TCP timeout (minutes).
    if !kept.iter().any(|p| p.starts_with("connect_timeout=")) {
        kept.push(format!("connect_timeout={DEFAULT_CONNECT_TIMEOUT_SECS}"));
    }
    (format!("{base}?{}", kept.join("&")), root_cert)
}

/// Query parameters whose values are never secret, shown as given;
/// `password` is shown as `password=***`, and anything else as `***` (its
/// name too: it might be a piece of a password written unencoded).
const SHOWN_PARAMETERS: &[&str] = &[
    "sslmode",
    "sslrootcert",
    "sslnegotiation",
    "connect_timeout",
    "application_name",
    "host",
    "hostaddr",
    "port",
    "dbname",
    "user",
    "target_session_attrs",
    "load_balance_hosts",
    "channel_binding",
    "keepalives",
    "keepalives_idle",
    "tcp_user_timeout",
];

/// Why a database setting cannot be used; never quotes the URL (its
/// password would be in it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    #[error("db: must be an SQLite file path or a postgres:// URL")]
    Empty,
    #[error(
        "db: libpq's key=value form is not read (not shown); write it as a URL: \
         postgres://user:password@host:port/dbname?sslmode=require"
    )]
    Keywords,
    /// The driver's reason, which does not quote the URL either.
    #[error("db: not a valid PostgreSQL URL ({0})")]
    Invalid(String),
    #[error("db: the URL has more than one @ before the host: write an @ in the password as %40")]
    PasswordAt,
}

/// Checks that the driver can read `url`, with errors that never quote it.
/// A password with an unencoded `@` is refused: the driver would end the
/// password at it and try to reach the rest as a host.
pub fn check_url(url: &str) -> Result<(), UrlError> {
    if !is_url(url) {
        return Err(UrlError::Keywords);
    }
    let config = driver_url(url)
        .0
        .parse::<postgres::Config>()
        .map_err(|e| UrlError::Invalid(e.to_string()))?;
    let mangled = config
        .get_hosts()
        .iter()
        .any(|h| matches!(h, postgres::config::Host::Tcp(name) if name.contains('@')));
    if mangled {
        return Err(UrlError::PasswordAt);
    }
    Ok(())
}

/// `url` as it may be shown (logs, errors, `--help`): read as the driver
/// reads it, then written back without its password, whether it came in
/// the user-info part or as `?password=`. A URL the driver cannot read is
/// not shown at all: no guess about where its password ends.
pub fn redacted(url: &str) -> String {
    let scheme = if url.starts_with("postgresql://") {
        "postgresql://"
    } else {
        "postgres://"
    };
    let not_shown = format!("{scheme}… (not a URL the driver reads; not shown)");
    if !is_url(url) {
        return not_shown;
    }
    let Ok(config) = driver_url(url).0.parse::<postgres::Config>() else {
        return not_shown;
    };
    let mut out = scheme.to_string();
    out.push_str(&user_info(&config));
    out.push_str(&hosts_of(&config));
    if let Some(db) = config.get_dbname().filter(|_| url_has_path(url)) {
        out.push('/');
        out.push_str(db);
    }
    let params = shown_params(url);
    if !params.is_empty() {
        out.push('?');
        out.push_str(&params.join("&"));
    }
    out
}

/// Whether `url` is a URL (not libpq's key=value form, which
/// `store::Database` keeps only to refuse it without quoting it).
fn is_url(url: &str) -> bool {
    url.starts_with("postgres://") || url.starts_with("postgresql://")
}

/// `user:***@`, `user@`, or nothing.
fn user_info(config: &postgres::Config) -> String {
    match (config.get_user(), config.get_password()) {
        (Some(user), Some(_)) => format!("{user}:***@"),
        (None, Some(_)) => ":***@".into(),
        (Some(user), None) => format!("{user}@"),
        (None, None) => String::new(),
    }
}

/// The hosts with their ports. A host with an `@` in it is what follows
/// an unencoded `@` in a password (the driver ends the password at the
/// first one): only the part after its last `@` is the host.
fn hosts_of(config: &postgres::Config) -> String {
    let ports = config.get_ports();
    config
        .get_hosts()
        .iter()
        .enumerate()
        .filter_map(|(i, host)| {
            let postgres::config::Host::Tcp(name) = host else {
                return None; // a socket folder: shown in the query, if there
            };
            let name = name.rsplit('@').next().unwrap_or_default();
            let name = if name.contains(':') {
                format!("[{name}]")
            } else {
                name.to_string()
            };
            let port = ports.get(i).or(if ports.len() == 1 {
                ports.first()
            } else {
                None
            });
            Some(match port {
                Some(p) => format!("{name}:{p}"),
                None => name,
            })
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// Where what follows the user-info part starts: after the first `@`, as
/// the driver reads it, so no piece of a password (`?`, `/` and `=` may be
/// in one) is taken for a path or a query.
fn after_credentials_at(url: &str) -> usize {
    let start = url.find("://").map_or(0, |i| i + 3);
    url[start..].find('@').map_or(start, |i| start + i + 1)
}

fn after_credentials(url: &str) -> &str {
    &url[after_credentials_at(url)..]
}

/// The URL before its query, and the query (after the credentials).
fn split_query(url: &str) -> (&str, &str) {
    let from = after_credentials_at(url);
    match url[from..].find('?') {
        Some(i) => (&url[..from + i], &url[from + i + 1..]),
        None => (url, ""),
    }
}

/// Whether the URL names a database in its path (not only `?dbname=`).
fn url_has_path(url: &str) -> bool {
    let rest = after_credentials(url);
    rest.split('?').next().unwrap_or_default().contains('/')
}

/// The query's parameters, each value hidden unless [`SHOWN_PARAMETERS`]
/// lists its name.
fn shown_params(url: &str) -> Vec<String> {
    let (_, query) = split_query(url);
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| match pair.split_once('=') {
            Some((key, value)) if SHOWN_PARAMETERS.contains(&key) => format!("{key}={value}"),
            Some(("password", _)) => "password=***".into(),
            _ => "***".into(),
        })
        .collect()
}

/// Whether `s` begins as libpq's keyword form does (`host=db user=qp
/// password=…`): no SQLite file name does.
pub fn is_libpq_keywords(s: &str) -> bool {
    const KEYWORDS: &[&str] = &[
        "host",
        "hostaddr",
        "port",
        "dbname",
        "user",
        "password",
        "passfile",
        "sslmode",
        "sslrootcert",
        "connect_timeout",
        "application_name",
        "options",
        "service",
    ];
    s.split_once('=')
        .is_some_and(|(key, _)| KEYWORDS.contains(&key.trim().to_ascii_lowercase().as_str()))
}

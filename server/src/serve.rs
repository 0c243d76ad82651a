//! Starting and stopping the server: the database, the HTTP listener, the
//! push transports, and the background loops ([`crate::workers`]).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::app::App;
use crate::config::Settings;
use crate::push::apns::ApnsTransport;
use crate::push::credentials::CredentialBoard;
use crate::push::dev::DevTransport;
use crate::push::fcm::FcmTransport;
use crate::push::metrics::{GatewayErrors, Resends};
use crate::push::router::PlatformRouter;
use crate::push::PushTransport;
use crate::store::{Database, Db, DbError};

/// Why the server did not start: each names the setting, file or address
/// at fault, and what to do when there is something to do.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The migration thread over `db_direct` panicked.
    #[error("migrating over db_direct panicked")]
    MigrationPanicked,
    /// The migration over `db_direct` failed.
    #[error("cannot migrate over db_direct: {0}")]
    MigrateDirect(#[source] DbError),
    /// `db` cannot be opened (locked by another server, not migrated, …).
    #[error("cannot open database {db}: {source}")]
    OpenDatabase { db: Database, source: DbError },
    /// `listen` cannot be bound.
    #[error("cannot listen on {listen}: {source}")]
    Listen {
        listen: SocketAddr,
        source: std::io::Error,
    },
    /// The bound listener has no address.
    #[error("{0}")]
    BoundAddress(#[source] std::io::Error),
    /// The TLS settings' files or ACME account cannot be used.
    #[error(transparent)]
    Tls(#[from] crate::tls::TlsError),
    /// The schema's version cannot be read.
    #[error("cannot read the schema version of {db}: {source}")]
    SchemaVersion { db: Database, source: DbError },
    /// The task reading `vapid_key` did not finish.
    #[error("reading the VAPID key: {0}")]
    VapidKeyTask(#[source] tokio::task::JoinError),
    /// A push transport's settings cannot be used (`apns_key`,
    /// `fcm_service_account`, `vapid_key`): the push module's words, which
    /// name the setting.
    #[error("{0}")]
    Push(String),
    /// The wake-ups' LISTEN (on `db_direct`, else `db`) heard nothing.
    #[error("cannot LISTEN on {listening}: no wake-ups from other instances")]
    NoWakeups { listening: Database },
    /// `db_direct` and `db` name different databases.
    #[error(
        "db_direct ({direct}) does not hear what is sent through db ({db}): \
         they must name the same database"
    )]
    DirectNotSameDatabase { direct: Database, db: Database },
    /// `db` is reached through a transaction-mode pooler.
    #[error(
        "the wake-ups sent through db ({db}) are not heard by its LISTEN: \
         behind a transaction-mode pooler (PgBouncer), set db_direct to the \
         database reached directly"
    )]
    WakeupsNotHeard { db: Database },
    /// The wake-ups could not be checked.
    #[error("cannot check the wake-ups on {listening}: {source}")]
    WakeupCheck {
        listening: Database,
        source: DbError,
    },
    /// The instances' shared VAPID public key cannot be read.
    #[error("reading the shared VAPID public key: {0}")]
    SharedVapidKey(#[source] DbError),
    /// `vapid_key` is not the key the other instances on the database use.
    #[error(
        "vapid_key ({}) is not the key the other instances on this database use \
         (theirs signs as {theirs}): browsers subscribed with that one, and their push \
         services would refuse every Web Push from this instance. Give every instance \
         a copy of the same key file (vapid_key), or, to start over with this key, \
         every browser must subscribe again: see docs/operators/postgres.md, One VAPID key",
        .path.display()
    )]
    OtherVapidKey { path: PathBuf, theirs: String },
}

pub struct RunningServer {
    pub addr: SocketAddr,
    pub app: Arc<App>,
    shutdown: Option<oneshot::Sender<()>>,
    http: JoinHandle<()>,
    workers: Vec<JoinHandle<()>>,
}

/// Opens the database. With `db_direct`, the schema is migrated over that
/// direct connection (the migration's session-level lock cannot be left
/// held by a pooler) and the pool then only checks the version.
fn open_db(settings: &Settings) -> Result<Db, StartError> {
    let mut migration = settings.migration;
    if let (Some(direct), crate::store::Migration::Apply) = (&settings.db_direct, migration) {
        let direct = direct.clone();
        std::thread::spawn(move || crate::store::versions::migrate(&direct))
            .join()
            .map_err(|_| StartError::MigrationPanicked)?
            .map_err(StartError::MigrateDirect)?;
        migration = crate::store::Migration::Require;
    }
    Db::open_with(&settings.db, migration).map_err(|source| StartError::OpenDatabase {
        db: settings.db.clone(),
        source,
    })
}

/// Opens the database, binds the listener and starts every task. Pushes go
/// through `push` when given (tests), else through the transports the
/// settings configure (APNs, FCM) and the dev transport.
pub async fn start(
    settings: Settings,
    push: Option<Arc<dyn PushTransport>>,
) -> Result<RunningServer, StartError> {
    let db = open_db(&settings)?;
    let listener =
        TcpListener::bind(settings.listen)
            .await
            .map_err(|source| StartError::Listen {
                listen: settings.listen,
                source,
            })?;
    let addr = listener.local_addr().map_err(StartError::BoundAddress)?;
    let tls = crate::tls::Tls::start(&settings.tls).await?.map(Arc::new);
    let mut settings = settings;
    // Pairing links name the bound address (port 0 resolved) unless told.
    if settings.public_url.is_none() {
        settings.public_url = Some(settings.url_of(addr));
        if addr.ip().is_unspecified() {
            // Pairing links, Web Push and the OAuth issuer would name an
            // address no phone or MCP client can reach.
            tracing::warn!(
                url = %settings.public_url(),
                "public_url is not set: pairing links and the OAuth issuer name the listen address; set --public-url (QP_PUBLIC_URL) to the URL phones and clients reach"
            );
        }
    }
    if reqwest::Url::parse(&settings.public_url())
        .is_ok_and(|u| !u.path().trim_matches('/').is_empty())
    {
        tracing::warn!(
            url = %settings.public_url(),
            "public_url has a path: MCP clients look for the OAuth metadata at the origin's /.well-known/ (with the path after it), which this server does not serve; give qp a host of its own for OAuth"
        );
    }
    let app = App::new(db, settings);
    let schema = app
        .db
        .run(crate::store::versions::version_of)
        .await
        .map_err(|source| StartError::SchemaVersion {
            db: app.settings.db.clone(),
            source,
        })?;
    app.metrics.register_build_info(schema);
    // The key served to browsers, read (or made) once, before any request:
    // a key file removed while the server runs then changes nothing (read
    // per request, a new key would appear and every browser subscribe again).
    if let Some(path) =
        crate::push::webpush::key_path(app.settings.vapid_key.as_deref(), &app.settings.db)
    {
        let key = tokio::task::spawn_blocking(move || {
            crate::push::webpush::VapidKey::load_or_create(&path)
        })
        .await
        .map_err(StartError::VapidKeyTask)?
        .map_err(StartError::Push)?;
        let _ = app.web_push_key.set(key.public_key());
    }

    let mut workers = Vec::new();
    if let Database::Postgres(url) = app.settings.db_direct.as_ref().unwrap_or(&app.settings.db) {
        // Serve only once other instances' wake-ups are heard (on the
        // direct connection when there is one: a transaction-mode pooler
        // would swallow LISTEN).
        let (listener_task, ready) = crate::workers::wakeups(&app, url.clone());
        workers.push(listener_task);
        let listening = app
            .settings
            .db_direct
            .clone()
            .unwrap_or_else(|| app.settings.db.clone());
        if tokio::time::timeout(Duration::from_secs(15), ready)
            .await
            .is_err()
        {
            return Err(StartError::NoWakeups { listening });
        }
        // A NOTIFY through the request connections must reach the LISTEN:
        // not through a transaction-mode pooler, nor when db_direct names
        // another database (waits would end only at their timeout).
        match crate::wakeups::probe(&app, Duration::from_secs(10)).await {
            Ok(true) => {}
            Ok(false) => {
                return Err(if app.settings.db_direct.is_some() {
                    StartError::DirectNotSameDatabase {
                        direct: listening,
                        db: app.settings.db.clone(),
                    }
                } else {
                    StartError::WakeupsNotHeard { db: listening }
                })
            }
            Err(source) => return Err(StartError::WakeupCheck { listening, source }),
        }
    }

    // Before serving: a refused instance must not hand a browser its key.
    same_vapid_key_as_the_other_instances(&app).await?;
    let (tx, rx) = oneshot::channel::<()>();
    let router = crate::http::router(app.clone());
    let cap = connection_cap(app.settings.max_connections);
    let http = tokio::spawn(accept_loop(
        listener,
        router,
        rx,
        app.stopping.subscribe(),
        cap,
        app.clone(),
        tls,
    ));

    crate::push::log_routes(&app.settings);
    let credentials = CredentialBoard::new(
        app.health.push_credentials.clone(),
        app.metrics.push.credentials.clone(),
    );
    let resends = Resends::new(app.metrics.push.resends.clone());
    let errors = GatewayErrors::new(app.metrics.push.gateway_errors.clone());
    let transport: Arc<dyn PushTransport> = match push {
        Some(t) => t,
        None => Arc::new(PlatformRouter {
            // Each reports its credential's state to /readyz and /metrics.
            ios: match app.settings.apns.clone() {
                Some(c) => {
                    let t = ApnsTransport::new(c).map_err(StartError::Push)?;
                    t.gate().report_to(&credentials);
                    t.report_resends_to(&resends);
                    t.report_errors_to(&errors);
                    Some(Arc::new(t))
                }
                None => None,
            },
            android: match app.settings.fcm.clone() {
                Some(c) => {
                    let t = FcmTransport::new(c).map_err(StartError::Push)?;
                    t.gate().report_to(&credentials);
                    t.report_resends_to(&resends);
                    t.report_errors_to(&errors);
                    Some(Arc::new(t))
                }
                None => None,
            },
            dev: Some(Arc::new(DevTransport::new(app.clone()))),
            web: crate::push::webpush::transport(&app.settings).map_err(StartError::Push)?,
        }),
    };
    if let (crate::store::Database::Postgres(_), Some(platforms)) =
        (&app.settings.db, transport.platforms())
    {
        crate::push::log_platforms(&platforms);
    }
    workers.extend(crate::workers::start(&app, transport));
    tracing::info!(
        %addr,
        version = crate::build_info::VERSION,
        commit = crate::build_info::COMMIT,
        schema,
        web_app = crate::http::webapp::embedded(),
        "qp serve listening"
    );
    crate::http::webapp::log_status();
    Ok(RunningServer {
        addr,
        app,
        shutdown: Some(tx),
        http,
        workers,
    })
}

/// On PostgreSQL, refuses to start with another VAPID key than the
/// instances before: browsers subscribed with the first one's public key,
/// and their push services refuse pushes signed with any other.
async fn same_vapid_key_as_the_other_instances(app: &Arc<App>) -> Result<(), StartError> {
    if !matches!(app.settings.db, crate::store::Database::Postgres(_)) {
        return Ok(());
    }
    let Some(path) =
        crate::push::webpush::key_path(app.settings.vapid_key.as_deref(), &app.settings.db)
    else {
        return Ok(());
    };
    // The key read at start, the one this instance serves to browsers.
    let Some(mine) = app.web_push_key.get().cloned() else {
        return Ok(());
    };
    let theirs = {
        let mine = mine.clone();
        app.db
            .run(move |conn| {
                crate::store::pg_schema::shared_setting(
                    conn,
                    "vapid_public_key",
                    &mine,
                    chrono::Utc::now().timestamp_millis(),
                )
            })
            .await
            .map_err(StartError::SharedVapidKey)?
    };
    if theirs != mine {
        return Err(StartError::OtherVapidKey { path, theirs });
    }
    Ok(())
}

/// Raises the soft open-file limit as far as the hard one allows (every
/// parked long-poll holds a socket; 1,024 is a common default) and returns
/// how many connections to serve at once: `wanted`, or fewer when the
/// limit leaves no room (a margin stays for the database, logs and accepts).
fn connection_cap(wanted: usize) -> usize {
    let soft = rlimit::increase_nofile_limit(u64::MAX).unwrap_or(1024);
    let cap = wanted.min((soft as usize).saturating_sub(128)).max(16);
    tracing::info!(
        open_file_limit = soft,
        max_connections = cap,
        "connection limits"
    );
    cap
}

/// The answer to a connection over the cap, written before closing it.
fn over_capacity_response() -> Vec<u8> {
    refusal(
        "over_capacity",
        "the server is at its connection limit; retry shortly",
    )
}

/// The answer to a connection over its address's share.
fn too_many_from_address(limit: usize) -> Vec<u8> {
    refusal(
        "too_many_connections",
        &format!(
            "your address has {limit} connections open to this server, the most one \
             address may (max_connections_per_address); close some or retry shortly"
        ),
    )
}

/// A 503 with an error body, as raw HTTP/1.1 (written before any request
/// is read).
fn refusal(code: &'static str, message: &str) -> Vec<u8> {
    let body = crate::http::error::ApiError::new(
        axum::http::StatusCode::SERVICE_UNAVAILABLE,
        code,
        message,
    )
    .body();
    let body = serde_json::to_string(&body).unwrap_or_default();
    format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// How long stopping waits for in-flight requests before closing the rest.
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves connections until `stop` fires, then ends them all: plain
/// HTTP/1.1, or TLS with HTTP/2 or HTTP/1.1 as the client's ALPN chose.
///
/// Why not `axum::serve`: it speaks HTTP/1 and HTTP/2 through hyper-util's
/// auto builder, whose per-connection state is larger; thousands of parked
/// long-polls are the normal load of this server, so each one should cost as
/// little as hyper's HTTP/1 connection does (see BENCHMARKS.md). Without
/// TLS nobody negotiates HTTP/2 (askers and phones speak HTTP/1.1), so the
/// plain listener is HTTP/1.1 only.
async fn accept_loop(
    listener: TcpListener,
    router: axum::Router,
    mut stop: oneshot::Receiver<()>,
    stopping: tokio::sync::watch::Receiver<bool>,
    max_connections: usize,
    app: Arc<App>,
    tls: Option<Arc<crate::tls::Tls>>,
) {
    let permits = Arc::new(tokio::sync::Semaphore::new(max_connections));
    let per_address = crate::connections::PerAddress::new(
        app.settings.max_connections_per_address,
        max_connections,
    );
    let mut last_full_warning: Option<tokio::time::Instant> = None;
    let mut last_address_warning: Option<tokio::time::Instant> = None;
    use hyper_util::rt::TokioIo;
    use tower_service::Service;

    let mut connections = tokio::task::JoinSet::new();
    loop {
        let (stream, peer) = tokio::select! {
            _ = &mut stop => break,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of file descriptors and the like: back off, keep serving.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            // Reap finished connections so the set does not grow.
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
        };
        // A trusted proxy carries many clients over its connections: it is
        // not counted as one client (its own limits stand in front).
        let proxied = app
            .settings
            .trusted_proxies
            .iter()
            .any(|n| n.contains(&peer.ip().to_canonical()));
        let slot = if proxied {
            None
        } else {
            match per_address.try_open(peer.ip()) {
                Some(slot) => Some(slot),
                None => {
                    app.metrics.connections_refused_per_address.inc();
                    if last_address_warning.is_none_or(|t| t.elapsed() > Duration::from_secs(1)) {
                        tracing::warn!(
                            client = %peer.ip().to_canonical(),
                            max_connections_per_address = per_address.limit(),
                            "one address holds its share of connections; answering 503"
                        );
                        last_address_warning = Some(tokio::time::Instant::now());
                    }
                    refuse(
                        &mut connections,
                        stream,
                        tls.is_none(),
                        too_many_from_address(per_address.limit()),
                    );
                    continue;
                }
            }
        };
        let Ok(permit) = permits.clone().try_acquire_owned() else {
            if last_full_warning.is_none_or(|t| t.elapsed() > Duration::from_secs(1)) {
                tracing::warn!(max_connections, "connection limit reached; answering 503");
                last_full_warning = Some(tokio::time::Instant::now());
            }
            refuse(
                &mut connections,
                stream,
                tls.is_none(),
                over_capacity_response(),
            );
            continue;
        };
        let _ = stream.set_nodelay(true);
        let router = router.clone();
        let stopping = stopping.clone();
        let app = app.clone();
        let tls = tls.clone();
        connections.spawn(async move {
            let _open = crate::metrics::Counted::new(&app.metrics.connections);
            let trusted = app.settings.trusted_proxies.clone();
            let idle = app.settings.idle_timeout;
            let service =
                hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                    let mut req = req.map(axum::body::Body::new);
                    // The client's address, for per-address limits (pairing).
                    let client = crate::tls::proxy::client_address(peer, req.headers(), &trusted);
                    req.extensions_mut()
                        .insert(axum::extract::ConnectInfo(client));
                    router.clone().call(req)
                });
            let ended = match tls {
                None => serve_http1(TokioIo::new(stream), service, stopping, idle).await,
                // Boxed: this task's state is as large as its largest
                // branch, and every parked plain long-poll would otherwise
                // carry room for a TLS session and an HTTP/2 connection.
                Some(tls) => Box::pin(serve_tls(tls, stream, service, stopping, idle)).await,
            };
            if let Err(e) = ended {
                tracing::debug!(error = %e, "connection ended");
            }
            drop(permit);
            drop(slot);
        });
    }
    drop(listener); // no new connections from here on
    let drained = tokio::time::timeout(DRAIN_TIMEOUT, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::warn!(
            left = connections.len(),
            "closing connections still busy after the drain timeout"
        );
        connections.abort_all();
    }
}

/// Answers a refused connection with `response` (plain HTTP only: over TLS
/// there is no cheap way to say it) and closes it.
fn refuse(
    connections: &mut tokio::task::JoinSet<()>,
    stream: tokio::net::TcpStream,
    plain: bool,
    response: Vec<u8>,
) {
    connections.spawn(async move {
        use tokio::io::AsyncWriteExt;
        let mut stream = stream;
        if plain {
            let _ = tokio::time::timeout(Duration::from_secs(1), stream.write_all(&response)).await;
        }
        let _ = stream.shutdown().await;
    });
}

/// Drives one connection until it ends, or until the server stops: then the
/// request in flight finishes (parked long-polls were just answered) and the
/// connection closes instead of staying alive.
macro_rules! drive {
    ($conn:expr, $stopping:expr) => {{
        let conn = $conn;
        tokio::pin!(conn);
        let mut stopping = $stopping;
        tokio::select! {
            r = conn.as_mut() => r,
            _ = async { let _ = stopping.wait_for(|s| *s).await; } => {
                conn.as_mut().graceful_shutdown();
                conn.await
            }
        }
    }};
}

/// What serves one connection: the router behind `service_fn`, answering
/// axum bodies (one name for the bounds HTTP/1 and HTTP/2 both need).
trait ConnService:
    hyper::service::HttpService<
        hyper::body::Incoming,
        ResBody = axum::body::Body,
        Future: Send + 'static,
    > + Send
    + 'static
{
}

impl<S> ConnService for S where
    S: hyper::service::HttpService<
            hyper::body::Incoming,
            ResBody = axum::body::Body,
            Future: Send + 'static,
        > + Send
        + 'static
{
}

/// The TLS handshake, then HTTP/2 or HTTP/1.1 as negotiated.
async fn serve_tls<S>(
    tls: Arc<crate::tls::Tls>,
    stream: tokio::net::TcpStream,
    service: S,
    stopping: tokio::sync::watch::Receiver<bool>,
    idle: Duration,
) -> Result<(), hyper::Error>
where
    S: ConnService,
{
    use crate::tls::Accepted;
    use hyper_util::rt::TokioIo;
    match tls.accept(stream).await {
        Ok(Accepted::Http { stream, h2: true }) => {
            serve_http2(TokioIo::new(stream), service, stopping).await
        }
        Ok(Accepted::Http { stream, h2: false }) => {
            serve_http1(TokioIo::new(stream), service, stopping, idle).await
        }
        Ok(Accepted::AcmeValidation) => Ok(()),
        Err(e) => {
            tracing::debug!(error = %e, "TLS handshake failed");
            Ok(())
        }
    }
}

async fn serve_http1<I, S>(
    io: I,
    service: S,
    stopping: tokio::sync::watch::Receiver<bool>,
    idle: Duration,
) -> Result<(), hyper::Error>
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
    S: ConnService,
{
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(hyper_util::rt::TokioTimer::new())
        // Idle keep-alive and slow headers alike (`idle_timeout_secs`).
        .header_read_timeout(idle)
        // hyper's own header limit stays at its default (100, on the
        // stack): raising it costs ~4 KB per parked long-poll. Our JSON 431
        // (http::error::MAX_HEADERS) sits below it.
        .serve_connection(io, service);
    drive!(conn, stopping)
}

async fn serve_http2<I, S>(
    io: I,
    service: S,
    stopping: tokio::sync::watch::Receiver<bool>,
) -> Result<(), hyper::Error>
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
    S: ConnService,
{
    let conn = hyper::server::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new())
        .timer(hyper_util::rt::TokioTimer::new())
        // The same header budget as HTTP/1 (our 431 sits below it).
        .max_header_list_size(64 * 1024)
        .serve_connection(io, service);
    drive!(conn, stopping)
}

impl RunningServer {
    /// Stops accepting, ends every connection and background task.
    /// Stops gracefully: no new connections; parked long-polls are answered
    /// with the question as it stands (clients re-poll); requests in flight
    /// finish within [`DRAIN_TIMEOUT`]; then the workers stop (their queues
    /// are in the database, so nothing is lost).
    pub async fn stop(mut self) {
        self.app.stopping.send_replace(true);
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if tokio::time::timeout(DRAIN_TIMEOUT + Duration::from_secs(1), &mut self.http)
            .await
            .is_err()
        {
            self.http.abort();
        }
        for w in &self.workers {
            w.abort();
        }
        // The tokens' last uses the cache holds, then last: the WAL into
        // the main file, the file closed and unlocked.
        crate::token_cache::flush(&self.app.tokens, &self.app.db).await;
        self.app.db.close().await;
    }
}

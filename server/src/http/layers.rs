//! The router's own middleware (request ids, the error shape and limits,
//! latency and database health) as plain tower services rather than
//! `axum::middleware::from_fn`. Every parked long-poll carries each
//! middleware's state for as long as it waits; a `from_fn` middleware's
//! state holds several copies of the request's storage (the closure's, the
//! function's, `Next::run`'s) and a boxed clone of the inner service, about
//! 1.2 KB per layer. Here each layer keeps only the inner future and what it
//! needs afterwards (see BENCHMARKS.md, memory per parked waiter): mapped
//! with `FutureExt::map`/`then`, not awaited in an `async` block, which
//! would store the inner future twice (the captured one and the awaited
//! one).

use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use axum::extract::{MatchedPath, Request};
use axum::http::HeaderValue;
use axum::response::Response;
use futures_util::future::{BoxFuture, Either};
use futures_util::FutureExt;
use tower_service::Service;

use crate::app::App;

/// What one middleware does around the inner service.
pub trait Middleware: Clone + Send + Sync + 'static {
    /// Handles `req`, calling `inner` (ready: its `poll_ready` has
    /// returned) at most once.
    fn call<S>(
        &self,
        inner: &mut S,
        req: Request,
    ) -> BoxFuture<'static, Result<Response, Infallible>>
    where
        S: Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
        S::Future: Send + 'static;
}

/// The layer of a [`Middleware`].
#[derive(Clone)]
pub struct Wrap<M>(pub M);

impl<S, M: Clone> tower_layer::Layer<S> for Wrap<M> {
    type Service = Wrapped<S, M>;

    fn layer(&self, inner: S) -> Self::Service {
        Wrapped {
            inner,
            middleware: self.0.clone(),
        }
    }
}

/// A service behind a [`Middleware`].
#[derive(Clone)]
pub struct Wrapped<S, M> {
    inner: S,
    middleware: M,
}

impl<S, M> Service<Request> for Wrapped<S, M>
where
    S: Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
    M: Middleware,
{
    type Response = Response;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Response, Infallible>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request) -> Self::Future {
        self.middleware.call(&mut self.inner, req)
    }
}

/// Takes or makes the request's id, and answers it ([`super::request_id`];
/// outside the trace layer, whose span reads it).
#[derive(Clone)]
pub struct RequestIds;

impl Middleware for RequestIds {
    fn call<S>(
        &self,
        inner: &mut S,
        mut req: Request,
    ) -> BoxFuture<'static, Result<Response, Infallible>>
    where
        S: Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
        S::Future: Send + 'static,
    {
        let id = super::request_id::take_or_make(&req);
        req.extensions_mut()
            .insert(super::request_id::RequestId(id.clone()));
        Box::pin(inner.call(req).map(move |resp| {
            let mut resp = resp?;
            if let Ok(v) = HeaderValue::from_str(&id) {
                resp.headers_mut().insert(super::request_id::HEADER, v);
            }
            Ok(resp)
        }))
    }
}

/// The URI and header limits (414, 431), the body read whole within its
/// deadline (408, 413), the framework's own error responses rewritten
/// into the error shape ([`super::error`]), and JSON bodies coded as the
/// request accepts ([`super::compress`]).
#[derive(Clone)]
pub struct JsonErrors(pub Arc<App>);

impl Middleware for JsonErrors {
    fn call<S>(
        &self,
        inner: &mut S,
        req: Request,
    ) -> BoxFuture<'static, Result<Response, Infallible>>
    where
        S: Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
        S::Future: Send + 'static,
    {
        use super::error;
        if let Some(refusal) = error::over_limits(&req) {
            return Box::pin(std::future::ready(Ok(refusal)));
        }
        let coding = super::compress::wanted(req.headers())
            .filter(|_| super::compress::allowed_for(req.uri().path()));
        if error::has_body(&req) {
            // The inner service was made ready for this request: take it,
            // leave a clone for the next one.
            let mut ready = std::mem::replace(inner, inner.clone());
            let deadline = self.0.settings.body_timeout;
            return Box::pin(async move {
                let req = match error::read_body_in_time(req, deadline).await {
                    Ok(req) => req,
                    Err(refusal) => return Ok(refusal),
                };
                let resp = error::shaped(ready.call(req).await?).await;
                Ok(match coding {
                    Some(c) if super::compress::applies(&resp) => {
                        super::compress::encode(resp, c).await
                    }
                    _ => resp,
                })
            });
        }
        Box::pin(inner.call(req).then(move |resp| {
            let resp = match resp {
                Ok(resp) => resp,
                Err(never) => match never {},
            };
            if error::needs_shape(&resp) {
                Either::Left(Box::pin(error::reshape(resp).map(Ok)) as BoxFuture<'static, _>)
            } else if let Some(c) = coding.filter(|_| super::compress::applies(&resp)) {
                Either::Left(
                    Box::pin(super::compress::encode(resp, c).map(Ok)) as BoxFuture<'static, _>
                )
            } else {
                Either::Right(std::future::ready(Ok(resp)))
            }
        }))
    }
}

/// Each request's latency under its route template, and what its response
/// says about the database's health ([`super::observe`], [`super::ready`]);
/// one layer for both. A route layer: matched routes only.
#[derive(Clone)]
pub struct Record(pub Arc<App>);

impl Middleware for Record {
    fn call<S>(
        &self,
        inner: &mut S,
        req: Request,
    ) -> BoxFuture<'static, Result<Response, Infallible>>
    where
        S: Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
        S::Future: Send + 'static,
    {
        let started = Instant::now();
        let writes = super::ready::writes(req.method());
        let method = super::observe::method_label(req.method());
        let route = req.extensions().get::<MatchedPath>().cloned();
        let app = self.0.clone();
        Box::pin(inner.call(req).map(move |resp| {
            let resp = resp?;
            super::observe::record_done(&app, started, method, route.as_ref(), &resp);
            super::ready::note_failures(&app, writes, &resp);
            Ok(resp)
        }))
    }
}

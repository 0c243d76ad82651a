//! The OpenAPI document: the copy checked in at `server/openapi.json` is the
//! one the server serves (regenerate with `QP_WRITE_OPENAPI=1 cargo test -p
//! qp --test openapi`), it validates under a third-party OpenAPI 3.1
//! validator, and the server's real responses fit it
//! (`python/openapi_check.py`).

mod common;

use common::Fixture;

const CHECKED_IN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../server/openapi.json");

#[tokio::test]
async fn the_served_document_is_the_checked_in_one() {
    let f = Fixture::new().await;
    let resp = f
        .http
        .get(format!("{}/openapi.json", f.base))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "application/json");
    let served = resp.text().await.unwrap();
    // The document is read by API clients, not by rustdoc: a handler's or a
    // type's intra-doc link would reach them as `[`path`]` noise.
    assert!(
        !served.contains("[`"),
        "the served OpenAPI document carries a rustdoc link; write the doc comment of the \
         handler or type it comes from in plain prose"
    );
    let checked_in = std::fs::read_to_string(CHECKED_IN).unwrap_or_default();
    if std::env::var_os("QP_WRITE_OPENAPI").is_some() && served != checked_in {
        // Written, and still a failure: a run that rewrites the file must
        // not also be the run that says it matches.
        std::fs::write(CHECKED_IN, &served).unwrap();
        panic!("server/openapi.json written; run again without QP_WRITE_OPENAPI");
    }
    assert!(
        served == checked_in,
        "server/openapi.json differs from what the server serves; if the API change is \
         intended, regenerate it: QP_WRITE_OPENAPI=1 cargo test -p qp --test openapi"
    );
}

#[test]
fn the_document_validates_and_real_responses_fit_it() {
    common::run_python_suite("openapi_check.py");
}

/// The limits the document quotes in its prose are the server's constants
/// (one drifted: the invite's default said 24 hours, the code's was ten
/// minutes).
#[test]
fn the_document_quotes_the_real_limits() {
    use qp_core::protocol::device as d;
    use qp_core::protocol::limits as l;
    let doc = std::fs::read_to_string(CHECKED_IN).unwrap();
    for quoted in [
        format!(
            "1 to {} (default {})",
            l::LIST_MAX_LIMIT,
            l::LIST_DEFAULT_LIMIT
        ),
        format!(
            "0 to {} (default {}",
            l::LONG_POLL_MAX_SECS,
            l::LONG_POLL_DEFAULT_SECS
        ),
        format!("capped at {}", l::LONG_POLL_MAX_SECS),
        format!(
            "1 to {} visible ASCII characters",
            qp_server::http::IDEMPOTENCY_KEY_MAX_LEN
        ),
        format!(
            "{} to {} hex digits",
            d::APNS_TOKEN_MIN_HEX,
            d::APNS_TOKEN_MAX_HEX
        ),
        format!("1 to {} letters", d::FCM_TOKEN_MAX_CHARS),
        format!(
            "1 to {}: https",
            qp_server::oauth::clients::MAX_REDIRECT_URIS
        ),
        format!(
            "0 to {} (a long-poll",
            qp_server::oauth::authorize::STATUS_WAIT_MAX_SECS
        ),
        format!(
            "(default {}: ten minutes)",
            qp_server::store::invites::DEFAULT_TTL_SECS
        ),
        format!(
            "button's text (1 to {} characters)",
            l::OPTION_LABEL_MAX_CHARS
        ),
        format!("gets back (1 to {} characters)", l::OPTION_VALUE_MAX_CHARS),
    ] {
        assert!(
            doc.contains(&quoted),
            "server/openapi.json does not quote {quoted:?}"
        );
    }
}

/// The history's revalidation is in the document: the 200 carries an
/// `ETag` header, a 304 answers `If-None-Match` (a client generated from
/// the document keeps the page and asks with it).
#[test]
fn the_history_documents_its_etag_and_the_304() {
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(CHECKED_IN).unwrap()).unwrap();
    let op = &doc["paths"]["/api/questions/history"]["get"];
    assert!(
        op["responses"]["200"]["headers"]["ETag"].is_object(),
        "no ETag on the 200: {op:#}"
    );
    assert!(
        op["responses"]["304"]["headers"]["ETag"].is_object(),
        "no 304 with its ETag: {op:#}"
    );
    let params = op["parameters"].as_array().unwrap();
    assert!(params
        .iter()
        .any(|p| p["name"] == "If-None-Match" && p["in"] == "header"));
}

/// The wire API guide quotes the long-poll bounds the server has.
#[test]
fn the_wire_api_guide_quotes_the_real_long_poll_bounds() {
    use qp_core::protocol::limits as l;
    let guide = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../docs/agents/wire-api.md"
    ))
    .unwrap();
    let (max, default) = (l::LONG_POLL_MAX_SECS, l::LONG_POLL_DEFAULT_SECS);
    for quoted in [
        format!("N from 0 to {max} (larger values are capped at {max}), default {default}"),
        format!("N from 0 to {max}, default {default} (422 `timeout` above)"),
    ] {
        assert!(
            guide.contains(&quoted),
            "docs/agents/wire-api.md does not quote {quoted:?}"
        );
    }
}

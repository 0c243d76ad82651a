//! `qp login --url URL` without a code: RFC 8628 against the server's
//! `/oauth/device_authorization` and `/oauth/token`. The person is asked
//! on their phone; this waits (polling at the server's interval, slower
//! when told `slow_down`) and stores the agent token as `qp login CODE`
//! does.

use std::time::Duration;

use serde_json::Value;

use super::credentials::{self, Credential};
use super::{EXIT_ERROR, EXIT_OK};

const CLIENT_ID: &str = "qp-cli";
const DEVICE_GRANT: &str = "urn:ietf:params:oauth:grant-type:device_code";

pub async fn run(
    url: &str,
    label: &str,
    as_user: Option<&str>,
    room: Option<&str>,
    ca_cert: Option<&std::path::Path>,
) -> i32 {
    match login(url, label, as_user, room, ca_cert).await {
        Ok(c) => match credentials::save(&c) {
            Ok(path) => {
                println!(
                    "signed in as {} ({}) on {url}; token stored in {}",
                    c.agent_name,
                    c.agent_id,
                    path.display()
                );
                EXIT_OK
            }
            Err(e) => {
                eprintln!("qp login: cannot store the token: {e}");
                EXIT_ERROR
            }
        },
        Err(e) => {
            eprintln!("qp login: {e}");
            EXIT_ERROR
        }
    }
}

async fn login(
    url: &str,
    label: &str,
    as_user: Option<&str>,
    room: Option<&str>,
    ca_cert: Option<&std::path::Path>,
) -> Result<Credential, String> {
    let http = qp_client::ExtraCa::read(ca_cert)
        .and_then(|ca| ca.client(Duration::from_secs(15)))
        .map_err(|e| e.to_string())?;
    let mut form = vec![("client_id", CLIENT_ID), ("label", label)];
    if let Some(u) = as_user {
        form.push(("user", u));
    }
    if let Some(r) = room {
        form.push(("room", r));
    }
    let (status, started) =
        post(&http, &format!("{url}/oauth/device_authorization"), &form).await?;
    if !status.is_success() {
        return Err(describe(&started, status));
    }
    let device_code = started["device_code"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let mut interval = started["interval"].as_u64().unwrap_or(5).max(1);
    let expires_in = started["expires_in"].as_u64().unwrap_or(300);
    eprintln!(
        "Asked {} on their phone to let this terminal ask in room {}.\nCheck that the question shows the code {}; tap Allow. Waiting (up to {} minutes)…",
        started["user"]["display_name"].as_str().unwrap_or("the person"),
        started["room"].as_str().unwrap_or("?"),
        started["user_code"].as_str().unwrap_or("?"),
        expires_in.div_ceil(60),
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(expires_in + 5);
    loop {
        tokio::time::sleep(Duration::from_secs(interval)).await;
        if std::time::Instant::now() > deadline {
            return Err("the request expired unanswered; run qp login again".into());
        }
        let (status, body) = post(
            &http,
            &format!("{url}/oauth/token"),
            &[
                ("grant_type", DEVICE_GRANT),
                ("device_code", &device_code),
                ("client_id", CLIENT_ID),
            ],
        )
        .await?;
        if status.is_success() {
            return Ok(Credential {
                url: url.to_string(),
                token: body["access_token"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                agent_id: body["agent"]["id"].as_str().unwrap_or_default().to_string(),
                agent_name: body["agent"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            });
        }
        match body["error"].as_str() {
            Some("authorization_pending") => {}
            Some("slow_down") => interval += 5,
            Some("access_denied") => return Err("the request was denied on the phone".into()),
            Some("expired_token") => {
                return Err("the request expired unanswered; run qp login again".into())
            }
            _ => return Err(describe(&body, status)),
        }
    }
}

async fn post(
    http: &reqwest::Client,
    url: &str,
    form: &[(&str, &str)],
) -> Result<(reqwest::StatusCode, Value), String> {
    let body: String = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(form)
        .finish();
    let resp = http
        .post(url)
        .header(
            reqwest::header::CONTENT_TYPE,
            "application/x-www-form-urlencoded",
        )
        .body(body)
        .send()
        .await
        .map_err(|e| format!("cannot reach {url}: {}", e.without_url()))?;
    let status = resp.status();
    Ok((status, resp.json().await.unwrap_or_default()))
}

fn describe(body: &Value, status: reqwest::StatusCode) -> String {
    body["error_description"]
        .as_str()
        .or(body["message"].as_str())
        .map(str::to_string)
        .unwrap_or_else(|| format!("the server answered HTTP {}", status.as_u16()))
}

//! Replays `tests/vectors/payload/`: encoding on the server, decoding on the phone.

mod vectors_common;

use std::collections::HashMap;

use qp_core::payload::{
    decode_apns, decode_fcm, encode_apns_question, encode_apns_resolved, encode_fcm_question,
    encode_fcm_resolved, PayloadError, Push, MAX_PAYLOAD_BYTES,
};
use qp_core::present::copy::Copy;
use qp_core::protocol::Question;
use serde_json::{json, Value};
use vectors_common::{eq, load, run_all};

fn question(v: &Value) -> Result<Question, String> {
    serde_json::from_value(v["question"].clone())
        .map_err(|e| format!("bad question in vector: {e}"))
}

fn fcm_map(v: &Value) -> HashMap<String, String> {
    v.as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
        .collect()
}

fn run_encode(v: &Value) -> Result<(), String> {
    let q = question(v)?;
    let want = &v["expect"];
    let apns = encode_apns_question(&q, Copy::english()).map_err(|e| e.to_string())?;
    let fcm = encode_fcm_question(&q, Copy::english()).map_err(|e| e.to_string())?;
    if let Some(w) = want.get("apns") {
        eq("apns", &serde_json::from_str(&apns.json).unwrap(), w)?;
    }
    if let Some(w) = want.get("fcm_data") {
        for (k, val) in w.as_object().unwrap() {
            eq(&format!("fcm data {k}"), &json!(fcm.data.get(k)), val)?;
        }
    }
    if let Some(w) = want.get("fcm_qp") {
        eq(
            "fcm qp",
            &serde_json::from_str(&fcm.data["qp"]).map_err(|e| e.to_string())?,
            w,
        )?;
    }
    eq("omitted", &json!(apns.report.omitted), &want["omitted"])?;
    eq(
        "shortened",
        &json!(apns.report.shortened),
        &want["shortened"],
    )?;
    eq(
        "fcm shortened",
        &json!(fcm.report.shortened),
        &want["shortened"],
    )?;
    Ok(())
}

fn run_encode_resolved(v: &Value) -> Result<(), String> {
    let q = question(v)?;
    let apns = encode_apns_resolved(&q, Copy::english(), v["me"].as_str());
    eq(
        "apns",
        &serde_json::from_str(&apns.json).unwrap(),
        &v["expect"]["apns"],
    )?;
    let fcm = encode_fcm_resolved(&q);
    eq(
        "fcm type",
        &json!(fcm.data["type"]),
        &v["expect"]["fcm_data"]["type"],
    )?;
    // The phone decodes what the server encoded.
    match (
        decode_apns(&apns.json),
        decode_fcm(&fcm.data.clone().into_iter().collect()),
    ) {
        (Ok(Push::Resolved(a)), Ok(Push::Resolved(b)))
            if a == b && a.id == q.id && a.state == q.state =>
        {
            Ok(())
        }
        other => Err(format!("round trip failed: {other:?}")),
    }
}

/// The budget guarantee: fits, and nothing a person answers with is lost.
fn run_encode_budget(v: &Value) -> Result<(), String> {
    let q = question(v)?;
    let apns = encode_apns_question(&q, Copy::english()).map_err(|e| e.to_string())?;
    let fcm = encode_fcm_question(&q, Copy::english()).map_err(|e| e.to_string())?;
    if apns.json.len() > MAX_PAYLOAD_BYTES || apns.report.bytes != apns.json.len() {
        return Err(format!("APNs payload is {} bytes", apns.json.len()));
    }
    let fcm_bytes: usize = fcm.data.iter().map(|(k, v)| k.len() + v.len()).sum();
    if fcm_bytes > MAX_PAYLOAD_BYTES || fcm.report.bytes != fcm_bytes {
        return Err(format!("FCM data is {fcm_bytes} bytes"));
    }
    if q.data.is_some() && apns.report.omitted != vec!["data".to_string()] {
        return Err("data must be reported as left out".into());
    }
    for (name, decoded) in [
        ("apns", decode_apns(&apns.json)),
        ("fcm", decode_fcm(&fcm.data.clone().into_iter().collect())),
    ] {
        let Ok(Push::Question(cq)) = decoded else {
            return Err(format!("{name}: the phone cannot decode it: {decoded:?}"));
        };
        let values: Vec<&str> = cq.options.iter().map(|o| o.value.as_str()).collect();
        let want: Vec<&str> = q.options.iter().map(|o| o.value.as_str()).collect();
        if cq.id != q.id || values != want || cq.text_input.is_some() != q.text_input.is_some() {
            return Err(format!("{name}: lost an id, an option or the text input"));
        }
        if cq.text_input.as_ref().map(|t| t.max_length)
            != q.text_input.as_ref().map(|t| t.max_length)
        {
            return Err(format!("{name}: max_length changed"));
        }
        if cq.target_user_id != q.target_user_id || cq.room.code != q.room.as_ref().unwrap().code {
            return Err(format!("{name}: lost the target or the room"));
        }
    }
    eq(
        "apns shortened",
        &json!(apns.report.shortened),
        &v["expect"]["shortened_apns"],
    )?;
    eq(
        "fcm shortened",
        &json!(fcm.report.shortened),
        &v["expect"]["shortened_fcm"],
    )
}

fn check_decoded(result: Result<Push, PayloadError>, want: &Value) -> Result<(), String> {
    match (result, want.get("error")) {
        (Err(e), Some(code)) => {
            eq("error code", &json!(e.code()), code)?;
            if let Some(f) = want.get("field") {
                eq("error field", &json!(e.field()), f)?;
            }
            Ok(())
        }
        (Err(e), None) => Err(format!("unexpected error {} ({e})", e.code())),
        (Ok(p), Some(_)) => Err(format!("expected an error, got {p:?}")),
        (Ok(Push::Question(q)), None) => eq(
            "question",
            &serde_json::to_value(q).unwrap(),
            &want["question"],
        ),
        (Ok(Push::Resolved(r)), None) => eq(
            "resolved",
            &serde_json::to_value(r).unwrap(),
            &want["resolved"],
        ),
    }
}

fn run_decode_apns(v: &Value) -> Result<(), String> {
    let raw = match v.get("raw") {
        Some(Value::String(s)) => s.clone(),
        _ => serde_json::to_string(&v["input"]).unwrap(),
    };
    check_decoded(decode_apns(&raw), &v["expect"])
}

fn run_decode_fcm(v: &Value) -> Result<(), String> {
    check_decoded(decode_fcm(&fcm_map(&v["input"])), &v["expect"])
}

#[test]
fn every_payload_vector_passes() {
    let vectors = load("payload");
    let malformed = vectors
        .iter()
        .filter(|(_, v)| v["expect"].get("error").is_some())
        .count();
    assert!(malformed >= 40, "only {malformed} malformed payloads");
    run_all(&vectors, 60, |v| match v["kind"].as_str() {
        Some("encode") => run_encode(v),
        Some("encode_resolved") => run_encode_resolved(v),
        Some("encode_budget") => run_encode_budget(v),
        Some("decode_apns") => run_decode_apns(v),
        Some("decode_fcm") => run_decode_fcm(v),
        k => Err(format!("unknown kind {k:?}")),
    });
}

//! Replays `tests/vectors/present/`: notifications, copy, registry, answer mapping.

mod vectors_common;

use std::collections::HashSet;

use qp_core::answer::{map_action, ActionError};
use qp_core::payload::CompactQuestion;
use qp_core::present::android::{android_notification, request_code};
use qp_core::present::copy::Copy;
use qp_core::present::ios::ios_notification;
use qp_core::present::registry::{plan_categories, KnownQuestion};
use qp_core::present::PresentOptions;
use qp_core::protocol::{time, AnswerSubmission, Question, QuestionState};
use serde_json::{json, Value};
use vectors_common::{eq, load, run_all};

fn ts(v: &Value) -> chrono::DateTime<chrono::Utc> {
    time::parse(v.as_str().expect("a timestamp")).expect("a valid timestamp")
}

fn compact(v: &Value) -> Result<CompactQuestion, String> {
    serde_json::from_value(v["question"].clone()).map_err(|e| format!("bad question: {e}"))
}

fn run_present(v: &Value) -> Result<(), String> {
    let q = compact(v)?;
    let opts = PresentOptions {
        require_unlock_for_danger: v["options"]["require_unlock_for_danger"]
            .as_bool()
            .unwrap_or(false),
        ..Default::default()
    };
    let ios = ios_notification(&q, &opts, Copy::english());
    eq(
        "ios",
        &serde_json::to_value(&ios).unwrap(),
        &v["expect"]["ios"],
    )?;
    let android = android_notification(&q, ts(&v["now"]), &opts, Copy::english());
    if android.actions.len() > 3 {
        return Err("more than three Android actions".into());
    }
    let mut codes: HashSet<i32> = HashSet::from([android.content_request_code]);
    let mut got = serde_json::to_value(&android).unwrap();
    for (i, a) in android.actions.iter().enumerate() {
        if !codes.insert(a.request_code) {
            return Err("request codes are not unique".into());
        }
        let slot = v["expect"]["android"]["actions"][i]["slot"]
            .as_u64()
            .unwrap_or(99) as u32;
        if a.request_code != request_code(&q.id, slot) {
            return Err(format!("action {i}: request code is not slot {slot}"));
        }
        let obj = got["actions"][i].as_object_mut().unwrap();
        obj.remove("request_code");
        obj.insert("slot".into(), json!(slot));
    }
    for k in ["notification_id", "content_request_code"] {
        got.as_object_mut().unwrap().remove(k);
    }
    eq("android", &got, &v["expect"]["android"])
}

fn run_copy(v: &Value) -> Result<(), String> {
    let q: Question = serde_json::from_value(v["question"].clone()).map_err(|e| e.to_string())?;
    let want = &v["expect"];
    let me = v["me"].as_str();
    if let Some(w) = want.get("title") {
        eq(
            "title",
            &json!(Copy::english().title(q.responder_scope, "Release Bot")),
            w,
        )?;
    }
    if let Some(w) = want.get("resolution") {
        eq("resolution", &json!(Copy::english().resolution(&q, me)), w)?;
    }
    if let Some(w) = want.get("time_remaining") {
        eq(
            "time",
            &json!(Copy::english().time_remaining(q.expires_at, ts(&v["now"]))),
            w,
        )?;
    }
    Ok(())
}

fn run_registry(v: &Value) -> Result<(), String> {
    let registered: Vec<String> = serde_json::from_value(v["registered"].clone()).unwrap();
    let known: Vec<KnownQuestion> = v["known"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| KnownQuestion {
            question_id: k["question_id"].as_str().unwrap().into(),
            state: QuestionState::parse(k["state"].as_str().unwrap()).unwrap(),
            expires_at: ts(&k["expires_at"]),
            created_at: ts(&k["created_at"]),
        })
        .collect();
    let plan = plan_categories(
        &registered,
        v["new"].as_str().unwrap(),
        &known,
        ts(&v["now"]),
        v["max"].as_u64().unwrap() as usize,
    );
    eq("keep", &json!(plan.keep), &v["expect"]["keep"])?;
    eq("removed", &json!(plan.removed), &v["expect"]["removed"])
}

fn run_map(v: &Value) -> Result<(), String> {
    let q = compact(v)?;
    let got = map_action(&q, v["action_id"].as_str().unwrap(), v["text"].as_str());
    let want = &v["expect"];
    match got {
        Ok(AnswerSubmission::Value(x)) => eq("value", &json!({ "value": x }), want),
        Ok(AnswerSubmission::Text(x)) => eq("text", &json!({ "text": x }), want),
        Err(e) => {
            eq("error", &json!(e.code()), &want["error"])?;
            if let (ActionError::TextTooLong { text, .. }, Some(kept)) = (&e, want.get("kept_text"))
            {
                eq("kept text", &json!(text), kept)?;
            }
            Ok(())
        }
    }
}

#[test]
fn every_presentation_vector_passes() {
    run_all(&load("present"), 40, |v| match v["kind"].as_str() {
        Some("present") => run_present(v),
        Some("copy") => run_copy(v),
        Some("registry") => run_registry(v),
        Some("map_action") => run_map(v),
        k => Err(format!("unknown kind {k:?}")),
    });
}

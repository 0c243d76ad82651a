//! Replays every conformance vector under `tests/vectors/protocol/` through
//! the protocol rules. The vector format is described in
//! `tests/vectors/README.md`; the Swift and Kotlin suites replay the same files.

use std::path::{Path, PathBuf};

use qp_core::protocol::{
    normalize_ask, time, AnswerOutcome, AnswerSubmission, AskContext, Question, QuestionState,
    Responder, ValidationError,
};
use serde_json::{json, Value};

const DEFAULT_NOW: &str = "2026-06-27T10:30:00Z";
const DEFAULT_TARGET: &str = "u_owner";

fn vector_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/protocol")
}

fn context_of(v: &Value) -> AskContext {
    let ctx = v.get("context");
    let now = ctx
        .and_then(|c| c.get("now"))
        .and_then(Value::as_str)
        .unwrap_or(DEFAULT_NOW);
    let target = match ctx.and_then(|c| c.get("default_target_user_id")) {
        Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        _ => Some(DEFAULT_TARGET.to_string()),
    };
    AskContext {
        now: time::parse(now).expect("vector context.now"),
        default_target_user_id: target,
    }
}

fn error_json(e: &ValidationError) -> Value {
    json!({ "field": e.field, "code": e.code.as_str() })
}

/// Every key of `expected` must equal the same key of `actual`.
fn check_subset(actual: &Value, expected: &Value) -> Result<(), String> {
    let exp = expected.as_object().ok_or("expected must be an object")?;
    for (k, want) in exp {
        let got = actual.get(k).unwrap_or(&Value::Null);
        if got != want {
            return Err(format!("{k}: expected {want}, got {got}"));
        }
    }
    Ok(())
}

fn run_ask(v: &Value) -> Result<(), String> {
    let result = normalize_ask(&v["input"], &context_of(v));
    match (result, v["expect"].get("ask"), v["expect"].get("error")) {
        (Ok(ask), Some(want), _) => check_subset(&serde_json::to_value(ask).unwrap(), want),
        (Err(e), _, Some(want)) if &error_json(&e) == want => Ok(()),
        (Err(e), _, _) => Err(format!("unexpected error {} ({})", error_json(&e), e)),
        (Ok(ask), _, _) => Err(format!(
            "expected an error, got {}",
            serde_json::to_string(&ask).unwrap()
        )),
    }
}

fn run_answer(v: &Value) -> Result<(), String> {
    let ctx = context_of(v);
    let mut question = normalize_ask(&v["ask"], &ctx)
        .map_err(|e| format!("the vector's ask is invalid: {e}"))?
        .into_question("q_vector".into(), ctx.now);
    if let Some(state) = v.get("state").and_then(Value::as_str) {
        question.state = QuestionState::parse(state).ok_or("bad state in vector")?;
        question.resolved_at = Some(ctx.now);
    }
    let now = match v.get("now").and_then(Value::as_str) {
        Some(s) => time::parse(s).map_err(|e| e.to_string())?,
        None => ctx.now,
    };
    let expect = &v["expect"];
    let responder = Responder {
        id: "u_responder".into(),
        display_name: "Responder".into(),
    };
    let outcome = AnswerSubmission::from_json(&v["submission"])
        .and_then(|sub| question.apply_answer(&sub, responder.clone(), now));
    match (outcome, expect.get("error")) {
        (Err(e), Some(want)) if &error_json(&e) == want => Ok(()),
        (Err(e), _) => Err(format!("unexpected error {} ({})", error_json(&e), e)),
        (Ok(o), Some(_)) => Err(format!("expected an error, got {o:?}")),
        (Ok(o), None) => {
            let got = match o {
                AnswerOutcome::Accepted => "accepted",
                AnswerOutcome::AlreadyResolved => "already_resolved",
            };
            if expect["outcome"] != got {
                return Err(format!(
                    "outcome: expected {}, got {got}",
                    expect["outcome"]
                ));
            }
            let mut actual = serde_json::to_value(&question).unwrap();
            if let (Some(ans), Some(want)) = (actual.get_mut("answer"), expect.get("answer")) {
                if let (Some(a), Some(w)) = (ans.as_object_mut(), want.as_object()) {
                    // The vector states the choice; responder and time are fixed here.
                    if a.get("responder") != Some(&serde_json::to_value(&responder).unwrap()) {
                        return Err("answer.responder is not the authenticated responder".into());
                    }
                    if a.get("answered_at") != Some(&json!(time::format(&now))) {
                        return Err("answer.answered_at is not the time of the answer".into());
                    }
                    a.retain(|k, _| w.contains_key(k));
                }
            }
            let mut want = expect.clone();
            want.as_object_mut().unwrap().remove("outcome");
            check_subset(&actual, &want)
        }
    }
}

fn run_transition(v: &Value) -> Result<(), String> {
    let from = QuestionState::parse(v["from"].as_str().unwrap_or_default()).ok_or("bad from")?;
    let to = QuestionState::parse(v["to"].as_str().unwrap_or_default()).ok_or("bad to")?;
    let want = v["allowed"].as_bool().ok_or("allowed must be a boolean")?;
    let got = from.can_become(to);
    if got != want {
        return Err(format!("can_become: expected {want}, got {got}"));
    }
    // The mutating verbs must agree with the table.
    let mut q = normalize_ask(&json!({"prompt": "p"}), &context_of(v))
        .unwrap()
        .into_question("q_t".into(), time::parse(DEFAULT_NOW).unwrap());
    q.state = from;
    let now = time::parse(DEFAULT_NOW).unwrap();
    let moved = match to {
        QuestionState::Cancelled => q.cancel(now).is_ok(),
        QuestionState::Answered => {
            let sub = AnswerSubmission::Value("approve".into());
            let r = Responder {
                id: "u".into(),
                display_name: "U".into(),
            };
            q.apply_answer(&sub, r, now) == Ok(AnswerOutcome::Accepted)
        }
        QuestionState::Expired => q.expire_if_due(q.expires_at),
        QuestionState::Pending => q.state != from,
    };
    if moved != want {
        return Err(format!(
            "the mutating verb moved={moved}, table says {want}"
        ));
    }
    Ok(())
}

fn run_question_wire(v: &Value) -> Result<(), String> {
    let q: Question = serde_json::from_value(v["input"].clone()).map_err(|e| e.to_string())?;
    check_subset(&serde_json::to_value(&q).unwrap(), &v["expect"]["question"])
}

#[test]
fn every_protocol_vector_passes() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(vector_dir())
        .expect("vector folder")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    let mut count = 0;
    let mut failures = Vec::new();
    let mut names = std::collections::HashSet::new();
    for file in &files {
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap())
            .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        for v in doc["vectors"].as_array().expect("vectors array") {
            count += 1;
            let name = v["name"].as_str().expect("every vector has a name");
            assert!(
                names.insert(name.to_string()),
                "duplicate vector name {name}"
            );
            let result = match v["kind"].as_str() {
                Some("ask") => run_ask(v),
                Some("answer") => run_answer(v),
                Some("transition") => run_transition(v),
                Some("question_wire") => run_question_wire(v),
                other => Err(format!("unknown kind {other:?}")),
            };
            if let Err(msg) = result {
                failures.push(format!(
                    "{}: {name}: {msg}",
                    file.file_name().unwrap().to_string_lossy()
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {count} vectors failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(count >= 80, "only {count} vectors found");
}

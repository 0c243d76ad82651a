//! A coding agent's permission prompt as a lock-screen question: reading a
//! `PreToolUse` hook event, summarising the tool call within the protocol's
//! limits (secret-looking values masked), and turning the resolved question
//! into the hook's decision. Pure logic; `qp hook` (cli/hook.rs) does the I/O.
//!
//! The rule that matters: the hook never approves by itself. Only an answer
//! `allow` from the person gives `allow`; every problem gives `ask`, which
//! hands the decision back to the agent's own prompt.

use std::sync::LazyLock;

use qp_core::protocol::ask::AskTextInput;
use qp_core::protocol::limits::{CONTEXT_MAX_CHARS, CORRELATION_ID_MAX_CHARS, PROMPT_MAX_CHARS};
use qp_core::protocol::{AskOption, AskRequest, OptionStyle, Question, QuestionState};
use regex::Regex;
use serde_json::{json, Map, Value};

/// The events whose decision we make. Others (`Stop`, `Notification`, …) are
/// left alone: they carry no decision, and a question-free push per agent
/// turn would teach people to ignore the phone.
pub const DECIDED_EVENT: &str = "PreToolUse";

/// The answer values of a hook question.
pub const ALLOW: &str = "allow";
pub const DENY: &str = "deny";

/// A hook event as the agent writes it on stdin.
#[derive(Debug, Clone, PartialEq)]
pub struct HookEvent {
    pub hook_event_name: String,
    pub tool_name: String,
    pub tool_input: Value,
    pub cwd: Option<String>,
    pub session_id: Option<String>,
    pub tool_use_id: Option<String>,
}

impl HookEvent {
    /// Reads stdin's bytes. Errors are sentences for the decision's reason.
    pub fn parse(bytes: &[u8]) -> Result<HookEvent, String> {
        let v: Value = serde_json::from_slice(bytes)
            .map_err(|e| format!("the hook event on stdin is not JSON ({e})"))?;
        let obj = v
            .as_object()
            .ok_or("the hook event on stdin is not a JSON object")?;
        let text = |k: &str| obj.get(k).and_then(Value::as_str).map(str::to_string);
        let hook_event_name =
            text("hook_event_name").ok_or("the hook event has no \"hook_event_name\" string")?;
        Ok(HookEvent {
            tool_name: text("tool_name").unwrap_or_default(),
            tool_input: obj.get("tool_input").cloned().unwrap_or(Value::Null),
            cwd: text("cwd"),
            session_id: text("session_id"),
            tool_use_id: text("tool_use_id"),
            hook_event_name,
        })
    }

    pub fn is_decided(&self) -> bool {
        self.hook_event_name == DECIDED_EVENT
    }

    /// The approve/deny question for this tool call, expiring after `ttl`
    /// seconds (the hook stops waiting then, so nobody answers in vain).
    pub fn question(&self, ttl: i64) -> AskRequest {
        let tool = if self.tool_name.trim().is_empty() {
            "a tool"
        } else {
            self.tool_name.trim()
        };
        let prompt = match self.subject() {
            Some(subject) => format!("Allow {tool}: {}", mask_secrets(&subject)),
            None => format!("Allow {tool}?"),
        };
        let mut data = Map::new();
        data.insert("hook_event_name".into(), json!(self.hook_event_name));
        data.insert("tool_name".into(), json!(self.tool_name));
        for (k, v) in [
            ("session_id", &self.session_id),
            ("tool_use_id", &self.tool_use_id),
        ] {
            if let Some(v) = v {
                data.insert(k.into(), json!(truncate(v, 200)));
            }
        }
        AskRequest {
            prompt: truncate(&one_line(&prompt), PROMPT_MAX_CHARS),
            context: self.context(),
            options: Some(vec![
                AskOption::Full {
                    value: ALLOW.into(),
                    label: Some("Allow".into()),
                    style: Some(OptionStyle::Primary),
                },
                AskOption::Full {
                    value: DENY.into(),
                    label: Some("Deny".into()),
                    style: Some(OptionStyle::Danger),
                },
            ]),
            // A typed reply denies and tells the agent why ("use staging").
            text_input: Some(AskTextInput {
                placeholder: Some("Deny with a note to the agent".into()),
                max_length: None,
            }),
            ttl: Some(ttl),
            correlation_id: self
                .tool_use_id
                .as_deref()
                .map(|id| truncate(id, CORRELATION_ID_MAX_CHARS)),
            data: Some(data),
            ..Default::default()
        }
    }

    /// What the call acts on: the command, the file, the URL, the pattern.
    fn subject(&self) -> Option<String> {
        let input = self.tool_input.as_object()?;
        for key in [
            "command",
            "file_path",
            "notebook_path",
            "path",
            "url",
            "pattern",
            "query",
        ] {
            if let Some(s) = input.get(key).and_then(Value::as_str) {
                if !s.trim().is_empty() {
                    return Some(s.trim().to_string());
                }
            }
        }
        // Unknown tools (MCP tools among them): their arguments, compactly.
        (!input.is_empty()).then(|| Value::Object(input.clone()).to_string())
    }

    /// The secondary line: the working directory's last part.
    fn context(&self) -> Option<String> {
        let cwd = self.cwd.as_deref()?.trim_end_matches('/');
        let last = cwd.rsplit('/').next().filter(|s| !s.is_empty())?;
        Some(truncate(
            &one_line(&format!("in {last}")),
            CONTEXT_MAX_CHARS,
        ))
    }
}

/// The hook's answer to the agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// `allow`, `deny` or `ask`.
    pub permission: &'static str,
    pub reason: String,
}

impl Decision {
    /// Hands the decision back to the agent's own prompt.
    pub fn ask(reason: impl Into<String>) -> Decision {
        Decision {
            permission: "ask",
            reason: reason.into(),
        }
    }

    /// The decision a resolved (or still pending) question gives.
    pub fn from_question(q: &Question) -> Decision {
        match (q.state, &q.answer) {
            (QuestionState::Answered, Some(a)) => {
                let who = &a.responder.display_name;
                match (a.value.as_deref(), a.text.as_deref()) {
                    (Some(ALLOW), _) => Decision {
                        permission: "allow",
                        reason: format!("Allowed by {who} (qp)"),
                    },
                    (Some(DENY), _) => Decision {
                        permission: "deny",
                        reason: format!("Denied by {who} (qp)"),
                    },
                    (None, Some(text)) => Decision {
                        permission: "deny",
                        reason: format!("Denied by {who} (qp), who wrote: {text}"),
                    },
                    // An answer the hook did not offer is no approval.
                    _ => Decision::ask(format!("{who} answered something the hook did not offer")),
                }
            }
            (QuestionState::Answered, None) => Decision::ask("the question has no answer"),
            (QuestionState::Expired, _) => Decision::ask("nobody answered on the phone in time"),
            (QuestionState::Cancelled, _) => Decision::ask("the question was cancelled"),
            (QuestionState::Pending, _) => Decision::ask("nobody answered on the phone in time"),
        }
    }

    /// The hook output the agent reads on stdout.
    pub fn to_json(&self) -> Value {
        json!({
            "hookSpecificOutput": {
                "hookEventName": DECIDED_EVENT,
                "permissionDecision": self.permission,
                "permissionDecisionReason": self.reason,
            }
        })
    }
}

/// Replaces secret-looking values with `•••`: `key=value` pairs whose key
/// says password/token/secret/key, bearer credentials, URL user-info, and
/// the token shapes of common services.
pub fn mask_secrets(s: &str) -> String {
    static PATTERNS: LazyLock<Vec<(Regex, &'static str)>> = LazyLock::new(|| {
        [
            // First: `Authorization: Bearer x` would otherwise mask the word "Bearer".
            (r"(?i)(bearer\s+)[A-Za-z0-9._~+/=-]+", "${1}•••"),
            // password=…, API_KEY: …, --token …, "secret": "…"
            (
                r#"(?i)((?:passw(?:or)?d|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|credentials?|auth)[A-Za-z0-9_-]*"?\s*(?:[=:]|\s)\s*"?)[^\s"',;&|]+"#,
                "${1}•••",
            ),
            // scheme://user:password@host
            (r"(://[^/\s:@]+:)[^@\s/]+@", "${1}•••@"),
            // Shapes: GitHub, OpenAI/Anthropic-style, Slack, AWS, qp's own.
            (
                r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|sk-[A-Za-z0-9_-]{16,}|xox[abprs]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16}|qp[aud]_[A-Za-z0-9_-]{16,})",
                "•••",
            ),
        ]
        .into_iter()
        .map(|(p, r)| (Regex::new(p).expect("a valid pattern"), r))
        .collect()
    });
    let mut out = s.to_string();
    for (re, replacement) in PATTERNS.iter() {
        out = re.replace_all(&out, *replacement).into_owned();
    }
    out
}

/// Newlines and tabs as spaces: a notification shows one paragraph.
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// At most `max` characters, ending in `…` when cut.
fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// The settings block for the agent (Claude Code's `settings.json` shape).
pub fn settings_block(command: &str, timeout_secs: u64) -> Value {
    json!({
        "hooks": {
            DECIDED_EVENT: [{
                "matcher": "Bash|Write|Edit|MultiEdit|NotebookEdit|WebFetch",
                "hooks": [{ "type": "command", "command": command, "timeout": timeout_secs }]
            }]
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use qp_core::protocol::{
        normalize_ask as normalize, AskContext, NormalizedAsk, ValidationError,
    };

    fn normalize_ask(body: &Value) -> Result<NormalizedAsk, ValidationError> {
        let ctx = AskContext {
            now: chrono::Utc::now(),
            default_target_user_id: Some("u_owner".into()),
        };
        normalize(body, &ctx)
    }

    fn event(tool: &str, input: Value) -> HookEvent {
        HookEvent::parse(
            json!({
                "session_id": "abc123", "transcript_path": "/tmp/t.jsonl",
                "cwd": "/home/dev/projects/payments-api", "hook_event_name": "PreToolUse",
                "tool_name": tool, "tool_input": input, "tool_use_id": "toolu_01"
            })
            .to_string()
            .as_bytes(),
        )
        .unwrap()
    }

    #[test]
    fn a_bash_call_becomes_a_valid_allow_deny_question() {
        let e = event(
            "Bash",
            json!({"command": "rm -rf build\n&& make", "description": "clean"}),
        );
        let ask = e.question(300);
        assert_eq!(ask.prompt, "Allow Bash: rm -rf build && make");
        assert_eq!(ask.context.as_deref(), Some("in payments-api"));
        assert_eq!(ask.correlation_id.as_deref(), Some("toolu_01"));
        // The server's own rules accept it.
        let body = serde_json::to_value(&ask).unwrap();
        let n = normalize_ask(&body).expect("valid under the protocol");
        assert_eq!(n.options.len(), 2);
        assert!(n.text_input.is_some());
    }

    #[test]
    fn long_inputs_are_cut_to_the_protocols_limits() {
        let e = HookEvent {
            cwd: Some(format!("/x/{}", "d".repeat(100))),
            ..event(
                "Write",
                json!({"file_path": format!("/{}", "p".repeat(2000)), "content": "x"}),
            )
        };
        let ask = e.question(60);
        assert_eq!(ask.prompt.chars().count(), PROMPT_MAX_CHARS);
        assert!(ask.prompt.ends_with('…'));
        assert_eq!(ask.context.unwrap().chars().count(), CONTEXT_MAX_CHARS);
        normalize_ask(&serde_json::to_value(e.question(60)).unwrap()).unwrap();
    }

    #[test]
    fn secrets_are_masked_in_the_prompt() {
        let cases = [
            ("mysql -u root --password=hunter2 prod", "hunter2"),
            (
                "curl -H 'Authorization: Bearer eyJhbGciOi.abc' x",
                "eyJhbGciOi",
            ),
            (
                "export API_KEY=sk-live-abcdefghijklmnopqrstuv",
                "abcdefghij",
            ),
            (
                "git clone https://bob:s3cr3tpass@github.com/x/y",
                "s3cr3tpass",
            ),
            ("echo ghp_abcdefghijklmnopqrstuvwxyz0123", "ghp_abcdef"),
            (
                "aws s3 ls --profile AKIAIOSFODNN7EXAMPLE",
                "AKIAIOSFODNN7EXAMPLE",
            ),
            (
                "QP_TOKEN qpa_0123456789abcdef0123 qp ask",
                "qpa_0123456789abcdef0123",
            ),
        ];
        for (cmd, secret) in cases {
            let prompt = event("Bash", json!({ "command": cmd })).question(60).prompt;
            assert!(!prompt.contains(secret), "{secret:?} leaked in {prompt:?}");
            assert!(prompt.contains("•••"), "{prompt:?}");
        }
        // Ordinary commands are left as written.
        assert_eq!(
            mask_secrets("cargo test --workspace"),
            "cargo test --workspace"
        );
    }

    #[test]
    fn unknown_tools_show_their_arguments() {
        let ask = event("mcp__db__query", json!({"sql": "DROP TABLE users"})).question(60);
        assert_eq!(
            ask.prompt,
            r#"Allow mcp__db__query: {"sql":"DROP TABLE users"}"#
        );
        let ask = event("Task", json!({})).question(60);
        assert_eq!(ask.prompt, "Allow Task?");
    }

    #[test]
    fn bad_stdin_is_an_error_not_a_panic() {
        assert!(HookEvent::parse(b"").is_err());
        assert!(HookEvent::parse(b"[1]").is_err());
        assert!(HookEvent::parse(br#"{"tool_name":"Bash"}"#).is_err());
    }

    fn resolved(state: QuestionState, value: Option<&str>, text: Option<&str>) -> Question {
        let mut q: Question = serde_json::from_value(json!({
            "id": "q_1", "prompt": "Allow Bash: ls", "state": "pending",
            "expires_at": "2026-12-01T10:00:00Z", "created_at": "2026-12-01T09:00:00Z"
        }))
        .unwrap();
        q.state = state;
        if state == QuestionState::Answered {
            q.answer = Some(
                serde_json::from_value(json!({
                    "value": value, "label": null, "text": text,
                    "responder": {"id": "u_1", "display_name": "Federica"},
                    "answered_at": "2026-12-01T09:01:00Z"
                }))
                .unwrap(),
            );
        }
        q
    }

    #[test]
    fn only_the_persons_allow_allows() {
        let d = |s, v, t| Decision::from_question(&resolved(s, v, t));
        use QuestionState::*;
        assert_eq!(d(Answered, Some("allow"), None).permission, "allow");
        assert_eq!(d(Answered, Some("deny"), None).permission, "deny");
        let typed = d(Answered, None, Some("use staging"));
        assert_eq!(typed.permission, "deny");
        assert!(typed.reason.contains("use staging"), "{}", typed.reason);
        assert_eq!(d(Answered, Some("approve"), None).permission, "ask");
        assert_eq!(d(Expired, None, None).permission, "ask");
        assert_eq!(d(Cancelled, None, None).permission, "ask");
        assert_eq!(d(Pending, None, None).permission, "ask");
        let out = d(Answered, Some("allow"), None).to_json();
        assert_eq!(out["hookSpecificOutput"]["hookEventName"], "PreToolUse");
        assert_eq!(out["hookSpecificOutput"]["permissionDecision"], "allow");
    }
}

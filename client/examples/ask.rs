//! Asks a person an approve/deny question and prints the outcome.
//!
//!     QP_URL=http://127.0.0.1:8750 QP_TOKEN=qpa_… QP_ROOM=OPS123 \
//!         cargo run -p qp-client --example ask -- "Deploy 2.4 to production?"

use qp_client::protocol::{AskRequest, QuestionState};
use qp_client::AskerClient;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let env = |k: &str| std::env::var(k).map_err(|_| format!("{k} is not set"));
    let (url, token, room) = (env("QP_URL")?, env("QP_TOKEN")?, env("QP_ROOM")?);
    let prompt = std::env::args()
        .nth(1)
        .unwrap_or("Deploy 2.4 to production?".into());

    let client = AskerClient::new(&url, &token)?;
    let asked = client.ask(&room, &AskRequest::yes_no(&prompt)).await?;
    // Re-polls the long-poll until the question resolves, riding out a
    // restarting server; a question ends answered, expired or cancelled.
    let done = client.await_resolution(&asked.id).await?;
    match (done.state, done.answer) {
        (QuestionState::Answered, Some(answer)) => {
            let who = answer.responder.display_name;
            println!("{who} answered {:?}", answer.value.or(answer.text));
        }
        (state, _) => println!("not answered: {}", state.as_str()),
    }
    Ok(())
}

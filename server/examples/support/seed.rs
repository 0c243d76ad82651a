//! The benchmarks' database seed: one room, one member, one agent that may
//! ask there. Shared by the examples with `#[path]` (each is its own crate).

use qp_server::store::{self, identity};

/// Seeds `db` and returns the agent's token and the member's user token.
/// On a thread of its own: the sync database client cannot run inside a
/// runtime.
pub fn bench_room(db: store::Database) -> (String, String) {
    std::thread::spawn(move || {
        let conn = store::connect(&db).unwrap();
        let room = identity::create_room(&conn, "Bench", Some("BENCH1")).unwrap();
        let u = identity::create_user(&conn, "Bench User", None).unwrap();
        identity::add_member(&conn, &room.id, &u.id).unwrap();
        let (_, agent) =
            identity::create_agent(&conn, "bench", &u.id, &["ask".into()], &[room.id]).unwrap();
        (
            agent,
            identity::create_user_token(&conn, &u.id, "").unwrap(),
        )
    })
    .join()
    .unwrap()
}

//! Names a person types for a user, a room or an agent: its id (a room's
//! invite code too), else its name exactly, else, ignoring case, its whole
//! name or whole words of it in order ("dana" for "Dana Dev"), when only
//! one matches. The one rule for every place a person names one: `qp
//! admin`, `qp login --as`, the sign-in form.
use super::*;

/// The user `typed` names (by this module's rule): `NotFound` when none does,
/// `Invalid` listing the candidates when several do.
pub fn find_user(conn: &Conn, typed: &str) -> Result<User, StoreError> {
    let typed = typed.trim();
    if let Some(u) = user(conn, typed)? {
        return Ok(u);
    }
    pick("user", typed, list_users(conn)?, |u| {
        (u.id.as_str(), vec![u.display_name.as_str()])
    })
}

/// The room `typed` names: its id, its invite code (any case), else its
/// name by this module's rule.
pub fn find_room(conn: &Conn, typed: &str) -> Result<Room, StoreError> {
    let typed = typed.trim();
    if let Some(r) = room_by_id(conn, typed)? {
        return Ok(r);
    }
    if let Some(r) = room_by_code(conn, typed)? {
        return Ok(r);
    }
    pick("room", typed, list_rooms(conn)?, |r| {
        (r.id.as_str(), vec![r.name.as_str()])
    })
}

/// The agent `typed` names: its id, else its name or its handle
/// (`release-bot`) by this module's rule.
pub fn find_agent(conn: &Conn, typed: &str) -> Result<Agent, StoreError> {
    let typed = typed.trim();
    if let Some(a) = agent(conn, typed)? {
        return Ok(a);
    }
    let all = conn.query_map(agents::ALL_AGENTS, &[], agents::agent_from_row)?;
    pick("agent", typed, all, |a| {
        (a.id.as_str(), vec![a.name.as_str(), a.handle.as_str()])
    })
}

/// The one candidate whose names match `typed` at the first level where
/// any does: exactly, then ignoring case, then as whole words ignoring
/// case. `names` gives a candidate's id (for the list of matches) and its
/// names.
fn pick<T>(
    what: &str,
    typed: &str,
    mut candidates: Vec<T>,
    names: impl Fn(&T) -> (&str, Vec<&str>),
) -> Result<T, StoreError> {
    let typed = typed.trim();
    let folded = words(typed);
    if folded.is_empty() {
        return Err(StoreError::Invalid(format!(
            "{what}: give its id or its name"
        )));
    }
    let levels: [&dyn Fn(&str) -> bool; 3] = [
        &|name| name == typed,
        &|name| words(name) == folded,
        &|name| words(name).windows(folded.len()).any(|w| w == folded),
    ];
    for matches in levels {
        let hits: Vec<usize> = (0..candidates.len())
            .filter(|&i| names(&candidates[i]).1.into_iter().any(matches))
            .collect();
        match hits.as_slice() {
            [] => continue,
            [one] => return Ok(candidates.swap_remove(*one)),
            several => {
                let listed: Vec<String> = several
                    .iter()
                    .map(|&i| {
                        let (id, of) = names(&candidates[i]);
                        format!("{id} ({})", of[0])
                    })
                    .collect();
                return Err(StoreError::Invalid(format!(
                    "{what} {typed:?} is ambiguous: {} match it; give the id",
                    listed.join(", ")
                )));
            }
        }
    }
    Err(StoreError::NotFound(format!(
        "no {what} {typed:?}: give its id or its name (`qp admin {what} list` shows them)"
    )))
}

/// `text`'s words, lower-cased: what a name is matched by when its case
/// and spacing do not matter.
fn words(text: &str) -> Vec<String> {
    text.split_whitespace().map(str::to_lowercase).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn people(names: &[&str]) -> Vec<(String, String)> {
        names
            .iter()
            .enumerate()
            .map(|(i, n)| (format!("u_{i}"), n.to_string()))
            .collect()
    }

    fn find(names: &[&str], typed: &str) -> Result<String, StoreError> {
        pick("user", typed, people(names), |(id, name)| {
            (id.as_str(), vec![name.as_str()])
        })
        .map(|(id, _)| id)
    }

    #[test]
    fn an_exact_name_then_any_case_then_whole_words() {
        let all = ["Dana Dev", "Sam", "sam", "Dana Smith", "Lee Ann Park"];
        assert_eq!(find(&all, "Dana Dev").unwrap(), "u_0");
        assert_eq!(find(&all, "dana  DEV").unwrap(), "u_0");
        assert_eq!(find(&all, "Sam").unwrap(), "u_1", "exact wins over case");
        assert_eq!(find(&all, "sam").unwrap(), "u_2");
        assert_eq!(find(&all, "dev").unwrap(), "u_0");
        assert_eq!(find(&all, "ann park").unwrap(), "u_4");
        assert!(matches!(
            find(&all, "lee park"),
            Err(StoreError::NotFound(_))
        ));
    }

    #[test]
    fn several_matches_are_listed_and_none_is_named() {
        let all = ["Dana Dev", "Sam", "sam", "Dana Smith"];
        let StoreError::Invalid(msg) = find(&all, "dana").unwrap_err() else {
            panic!("ambiguous is a usage error");
        };
        assert!(
            msg.contains("u_0 (Dana Dev)") && msg.contains("u_3 (Dana Smith)"),
            "{msg}"
        );
        assert!(matches!(find(&all, "SAM"), Err(StoreError::Invalid(_))));
        assert!(
            matches!(find(&all, "Dan"), Err(StoreError::NotFound(_))),
            "no prefixes"
        );
        assert!(matches!(find(&all, "  "), Err(StoreError::Invalid(_))));
    }
}

//! The iOS category registry. `setNotificationCategories` replaces the whole
//! set, so every registration must merge with what is registered; the set
//! must stay bounded, and categories of resolved questions should go.
//!
//! [`plan_categories`] takes what is registered now and returns the full set
//! to register: every category that is not ours (the app's static ones and
//! any other) is kept; ours are dropped when their question is resolved or
//! expired, then the oldest while over the bound; the new one is added last.

use chrono::{DateTime, Utc};

use crate::actions::question_of_category;
use crate::protocol::QuestionState;

/// How many categories to keep at most (a well-known SDK keeps 128).
pub const DEFAULT_MAX_CATEGORIES: usize = 128;

/// What the phone knows about a question (from its feed store).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct KnownQuestion {
    pub question_id: String,
    pub state: QuestionState,
    pub expires_at: DateTime<Utc>,
    pub created_at: DateTime<Utc>,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RegistryPlan {
    /// The identifiers to register, in order (the new one last).
    pub keep: Vec<String>,
    /// Our identifiers that were dropped.
    pub removed: Vec<String>,
}

pub fn plan_categories(
    registered: &[String],
    new_category: &str,
    known: &[KnownQuestion],
    now: DateTime<Utc>,
    max: usize,
) -> RegistryPlan {
    let info = |cat: &str| {
        question_of_category(cat).and_then(|id| known.iter().find(|k| k.question_id == id))
    };
    let mut foreign: Vec<String> = Vec::new();
    let mut ours: Vec<String> = Vec::new();
    let mut removed: Vec<String> = Vec::new();
    for cat in registered {
        if cat == new_category || foreign.contains(cat) || ours.contains(cat) {
            continue;
        }
        if question_of_category(cat).is_none() {
            foreign.push(cat.clone());
            continue;
        }
        match info(cat) {
            Some(k) if k.state.is_terminal() || k.expires_at <= now => removed.push(cat.clone()),
            _ => ours.push(cat.clone()),
        }
    }
    // Over the bound: drop the oldest of ours (unknown questions count as oldest).
    let room = max.saturating_sub(foreign.len() + 1);
    if ours.len() > room {
        let mut by_age: Vec<(Option<DateTime<Utc>>, usize)> = ours
            .iter()
            .enumerate()
            .map(|(i, c)| (info(c).map(|k| k.created_at), i))
            .collect();
        by_age.sort();
        let drop: Vec<usize> = by_age
            .iter()
            .take(ours.len() - room)
            .map(|(_, i)| *i)
            .collect();
        let mut kept = Vec::new();
        for (i, c) in ours.into_iter().enumerate() {
            if drop.contains(&i) {
                removed.push(c);
            } else {
                kept.push(c);
            }
        }
        ours = kept;
    }
    let mut keep = foreign;
    keep.extend(ours);
    keep.push(new_category.to_string());
    RegistryPlan { keep, removed }
}

//! Free functions the platform glue calls where no `PhoneCore` is at hand
//! (a store that cannot be opened still shows a notification) and the
//! cross-boundary names both sides must agree on. All forward to qp-core.

use std::collections::HashMap;

use qp_core::payload;
use qp_core::present::copy::Copy;
use qp_core::present::{android, ios, registry, PresentOptions};

use crate::error::QpError;
use crate::types::{
    AndroidChannel, AndroidNotification, DecodedPush, FallbackNotification, IosNotification,
    KnownQuestion, PushQuestion, RegistryPlan, ShownNotification, Timestamp,
};

/// The protocol version this library implements ("1.1").
#[uniffi::export]
pub fn protocol_version() -> String {
    qp_core::protocol::PROTOCOL_VERSION.to_string()
}

/// Installs the platform logger (oslog on Apple, logcat on Android) once
/// per process; later calls do nothing. Call it first, in the app and in
/// the extension.
#[uniffi::export]
pub fn init_logging() {
    qp_core::logging::init_logging();
}

/// Reports a failure the glue caught at an entry point the system calls
/// (it could not be thrown there): logged through the core's logger.
/// `error`: the error's type and the core's message, never a token.
#[uniffi::export]
pub fn report_glue_failure(site: String, error: String) {
    qp_core::logging::report_glue_failure(&site, &error);
}

/// Decodes an APNs `userInfo` serialized as JSON (without a store).
#[uniffi::export]
pub fn decode_apns_payload(json: String) -> Result<DecodedPush, QpError> {
    Ok(payload::decode_apns(&json)?.into())
}

/// The question a notification is about (its `userInfo` as JSON), for the
/// deep link of a tap: a question, a resolution, a sealed push or a
/// notification the glue posted. Nil when it names none. Decodes nothing.
#[uniffi::export]
pub fn question_id_of_notification(user_info_json: String) -> Option<String> {
    qp_core::phone::question_id_of_notification(&user_info_json)
}

/// Whether a notification on screen (its `userInfo` as JSON) is this
/// library's, and whether a question or a resolution. Nil: not ours.
#[uniffi::export]
pub fn shown_notification(user_info_json: String) -> Option<ShownNotification> {
    qp_core::phone::shown_notification(&user_info_json)
}

/// Whether a notification is this library's, by its `userInfo`'s keys
/// alone (what sign-out removes: no value is read, so none can hide it).
#[uniffi::export]
pub fn is_library_notification(user_info_keys: Vec<String>) -> bool {
    qp_core::phone::is_library_notification(user_info_keys.iter().map(String::as_str))
}

/// The `userInfo` to give a notification the glue posts itself (a
/// question, or a resolution in its place), so that it is known as ours.
#[uniffi::export]
pub fn posted_user_info(question_id: String, resolution: bool) -> HashMap<String, String> {
    qp_core::phone::posted_user_info(&question_id, resolution)
}

/// The question an FCM data message is about (the deep link of a tap on
/// its fallback notification). Nil when it names none.
#[uniffi::export]
pub fn question_id_of_fcm(data: HashMap<String, String>) -> Option<String> {
    qp_core::phone::question_id_of_fcm(&data)
}

/// Decodes an FCM data message (`RemoteMessage.data`) without a store.
#[uniffi::export]
pub fn decode_fcm_payload(data: HashMap<String, String>) -> Result<DecodedPush, QpError> {
    Ok(payload::decode_fcm(&data)?.into())
}

// Where no PhoneCore is at hand, the words come from `languages`: the
// person's preferred languages, most preferred first (iOS
// `Locale.preferredLanguages`, Android `LocaleList`); empty means English.

/// The language these `languages` negotiate to (`pt-BR` for `pt-PT`).
#[uniffi::export]
pub fn negotiated_language(languages: Vec<String>) -> String {
    Copy::for_languages(&languages).language().to_string()
}

/// The plain notification to show when a push cannot be decoded.
#[uniffi::export]
pub fn fallback_notification(
    title: Option<String>,
    body: Option<String>,
    languages: Vec<String>,
) -> FallbackNotification {
    payload::fallback(
        title.as_deref(),
        body.as_deref(),
        &Copy::for_languages(&languages),
    )
}

/// Android: the plain notification for an FCM data message that cannot be
/// decoded, from its words (the app reads none of its keys).
#[uniffi::export]
pub fn fcm_fallback_notification(
    data: HashMap<String, String>,
    languages: Vec<String>,
) -> FallbackNotification {
    payload::fcm_fallback(&data, &Copy::for_languages(&languages))
}

/// The iOS notification content and its per-question category.
#[uniffi::export]
pub fn ios_notification(
    question: PushQuestion,
    require_unlock_for_danger: bool,
    languages: Vec<String>,
) -> IosNotification {
    let opts = PresentOptions {
        require_unlock_for_danger,
        ..Default::default()
    };
    ios::ios_notification(&question, &opts, &Copy::for_languages(&languages))
}

/// The Android notification and its (at most three) actions.
#[uniffi::export]
pub fn android_notification(
    question: PushQuestion,
    now: Timestamp,
    require_unlock_for_danger: bool,
    languages: Vec<String>,
) -> AndroidNotification {
    let opts = PresentOptions {
        require_unlock_for_danger,
        ..Default::default()
    };
    android::android_notification(&question, now, &opts, &Copy::for_languages(&languages))
}

/// The full set of categories to register, from what the caller knows
/// (`PhoneCore.planIosCategories` reads it from the store instead).
#[uniffi::export]
pub fn plan_ios_categories(
    registered: Vec<String>,
    new_category: String,
    known: Vec<KnownQuestion>,
    now: Timestamp,
    max: u32,
) -> RegistryPlan {
    registry::plan_categories(&registered, &new_category, &known, now, max as usize)
}

/// How many categories the app keeps registered at most.
#[uniffi::export]
pub fn max_ios_categories() -> u32 {
    registry::DEFAULT_MAX_CATEGORIES as u32
}

/// The category identifier of a question (`qp.q.<id>`).
#[uniffi::export]
pub fn ios_category_id(question_id: String) -> String {
    ios::category_id(&question_id)
}

/// The question id of one of our category identifiers; none for others
/// (the app's own categories).
#[uniffi::export]
pub fn question_id_of_category(category: String) -> Option<String> {
    ios::question_of_category(&category).map(String::from)
}

/// Android: the notification channel every question is posted on.
#[uniffi::export]
pub fn android_channel(languages: Vec<String>) -> AndroidChannel {
    android::channel(&Copy::for_languages(&languages))
}

/// Android: the notification id of a question (the tag is its id).
#[uniffi::export]
pub fn android_notification_id(question_id: String) -> i32 {
    android::notification_id(&question_id)
}

/// Android: the PendingIntent request code of a question's slot (0 the
/// content intent, 1..3 the actions).
#[uniffi::export]
pub fn android_request_code(question_id: String, slot: u32) -> i32 {
    android::request_code(&question_id, slot)
}

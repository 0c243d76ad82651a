//! The core's plain types as the bindings see them. Each declaration below
//! is uniffi's "remote type": it names a type that lives in `qp-core` (which
//! knows nothing of uniffi) and lists its fields so uniffi can generate the
//! Swift and Kotlin side. No data is copied into mirror records: the core's
//! values cross the boundary as they are, and the compiler checks every
//! field list against the real type.
//!
//! Times are one custom type, [`Timestamp`]: `Date` in Swift, `Instant` in
//! Kotlin, `DateTime<Utc>` in Rust, whole seconds as the protocol has them.

use std::time::SystemTime;

use chrono::{DateTime, Utc};

/// A point in time (`Date` / `java.time.Instant` on the platforms).
pub type Timestamp = DateTime<Utc>;

uniffi::custom_type!(Timestamp, SystemTime, {
    remote,
    lower: |t| t.into(),
    try_lift: |t| Ok(qp_core::protocol::time::whole_seconds(DateTime::<Utc>::from(t))),
});

// ---- the protocol ----

pub type OptionStyle = qp_core::protocol::OptionStyle;
#[uniffi::remote(Enum)]
pub enum OptionStyle {
    Primary,
    Danger,
    Default,
}

pub type ResponderScope = qp_core::protocol::ResponderScope;
#[uniffi::remote(Enum)]
pub enum ResponderScope {
    Direct,
    Room,
}

pub type QuestionState = qp_core::protocol::QuestionState;
#[uniffi::remote(Enum)]
pub enum QuestionState {
    Pending,
    Answered,
    Expired,
    Cancelled,
}

/// Which protocol rule a value broke (the `code` of a validation error).
pub type ValidationCode = qp_core::protocol::ErrorCode;
#[uniffi::remote(Enum)]
pub enum ValidationCode {
    Required,
    InvalidType,
    Empty,
    TooLong,
    TooFew,
    TooMany,
    OutOfRange,
    InvalidValue,
    DuplicateValue,
    ConflictingStyle,
    MultiplePrimary,
    NotAllowed,
    UnsupportedInV1,
    TooLarge,
    TooDeep,
    InvalidCharacters,
    UnknownOption,
    TextNotAllowed,
    AmbiguousAnswer,
    MissingAnswer,
}

pub type TextInput = qp_core::protocol::TextInput;
#[uniffi::remote(Record)]
pub struct TextInput {
    pub placeholder: Option<String>,
    pub max_length: u32,
}

pub type Responder = qp_core::protocol::Responder;
#[uniffi::remote(Record)]
pub struct Responder {
    pub id: String,
    pub display_name: String,
}

pub type Answer = qp_core::protocol::Answer;
#[uniffi::remote(Record)]
pub struct Answer {
    pub value: Option<String>,
    pub label: Option<String>,
    pub text: Option<String>,
    pub responder: Responder,
    pub answered_at: Timestamp,
}

// ---- pushes ----

pub type PushRoom = qp_core::payload::CompactRoom;
#[uniffi::remote(Record)]
pub struct PushRoom {
    pub code: String,
    pub name: String,
}

pub type PushOption = qp_core::payload::CompactOption;
#[uniffi::remote(Record)]
pub struct PushOption {
    pub value: String,
    pub label: String,
    pub style: OptionStyle,
}

/// The server's sign-in consent, in parts: the core words it in the
/// person's language (`PushQuestion.consent`).
pub type ConsentRequest = qp_core::protocol::ConsentRequest;
#[uniffi::remote(Record)]
pub struct ConsentRequest {
    pub client: String,
    pub name: String,
    pub host: Option<String>,
    pub returns_to: Option<String>,
    pub code: String,
}

/// A question as a push delivered it: enough to show and answer offline.
pub type PushQuestion = qp_core::payload::CompactQuestion;
#[uniffi::remote(Record)]
pub struct PushQuestion {
    pub v: i64,
    pub id: String,
    pub room: PushRoom,
    pub asker: String,
    pub prompt: String,
    pub context: Option<String>,
    pub options: Vec<PushOption>,
    pub text_input: Option<TextInput>,
    pub responder_scope: ResponderScope,
    pub target_user_id: Option<String>,
    pub expires_at: Timestamp,
    pub created_at: Timestamp,
    #[uniffi(default = None)]
    pub consent: Option<ConsentRequest>,
}

/// A question that resolved (answered, expired, cancelled).
pub type ResolvedPush = qp_core::payload::ResolvedNotice;
#[uniffi::remote(Record)]
pub struct ResolvedPush {
    pub v: i64,
    pub id: String,
    pub state: QuestionState,
    pub answer: Option<Answer>,
    pub resolved_at: Option<Timestamp>,
}

pub type FallbackNotification = qp_core::payload::FallbackNotification;
#[uniffi::remote(Record)]
pub struct FallbackNotification {
    pub title: String,
    pub body: String,
}

/// What a notification on screen is to this library (`shownNotification`).
pub type ShownNotification = qp_core::phone::ShownNotification;
#[uniffi::remote(Record)]
pub struct ShownNotification {
    /// The question it names, when it names one (a push too broken to name
    /// one is still this library's).
    pub question_id: Option<String>,
    /// A resolution (pushed, or posted in its question's place) rather than
    /// a question with its buttons.
    pub resolution: bool,
}

// ---- presentation ----

pub type IosAction = qp_core::present::ios::IosAction;
#[uniffi::remote(Record)]
pub struct IosAction {
    pub identifier: String,
    pub title: String,
    pub destructive: bool,
    pub authentication_required: bool,
    pub foreground: bool,
}

pub type IosTextAction = qp_core::present::ios::IosTextAction;
#[uniffi::remote(Record)]
pub struct IosTextAction {
    pub identifier: String,
    pub title: String,
    pub button_title: String,
    pub placeholder: String,
    pub authentication_required: bool,
}

pub type IosCategory = qp_core::present::ios::IosCategory;
#[uniffi::remote(Record)]
pub struct IosCategory {
    pub identifier: String,
    pub actions: Vec<IosAction>,
    pub text_action: Option<IosTextAction>,
}

pub type IosNotification = qp_core::present::ios::IosNotification;
#[uniffi::remote(Record)]
pub struct IosNotification {
    pub title: String,
    pub subtitle: Option<String>,
    pub body: String,
    pub thread_id: String,
    pub category: IosCategory,
}

pub type IosResolvedNotification = qp_core::present::ios::IosResolvedNotification;
#[uniffi::remote(Record)]
pub struct IosResolvedNotification {
    pub identifier: String,
    pub title: String,
    pub subtitle: String,
    pub body: String,
    pub thread_id: String,
}

pub type ReconcilePlan = qp_core::phone::reconcile::ReconcilePlan;
#[uniffi::remote(Record)]
pub struct ReconcilePlan {
    pub resolved: Vec<IosResolvedNotification>,
    pub remove: Vec<String>,
    pub post: Vec<PushQuestion>,
}

pub type KnownQuestion = qp_core::present::registry::KnownQuestion;
#[uniffi::remote(Record)]
pub struct KnownQuestion {
    pub question_id: String,
    pub state: QuestionState,
    pub expires_at: Timestamp,
    pub created_at: Timestamp,
}

pub type RegistryPlan = qp_core::present::registry::RegistryPlan;
#[uniffi::remote(Record)]
pub struct RegistryPlan {
    pub keep: Vec<String>,
    pub removed: Vec<String>,
}

pub type AndroidChannel = qp_core::present::android::AndroidChannel;
#[uniffi::remote(Record)]
pub struct AndroidChannel {
    pub id: String,
    pub name: String,
    pub description: String,
    pub importance: ChannelImportance,
    pub sound: NotificationSound,
}

pub type AndroidGroupSummary = qp_core::present::android::AndroidGroupSummary;
#[uniffi::remote(Record)]
pub struct AndroidGroupSummary {
    pub channel_id: String,
    pub group: String,
    pub tag: String,
    pub notification_id: i32,
    pub title: String,
    pub lines: Vec<String>,
    pub number: u32,
}

// ---- presentation options (what the app sets) ----

pub type InterruptionLevel = qp_core::present::InterruptionLevel;
#[uniffi::remote(Enum)]
pub enum InterruptionLevel {
    Passive,
    Active,
    TimeSensitive,
    Critical,
}

pub type NotificationSound = qp_core::present::NotificationSound;
#[uniffi::remote(Enum)]
pub enum NotificationSound {
    Default,
    Silent,
    Named { name: String },
}

pub type ChannelImportance = qp_core::present::ChannelImportance;
#[uniffi::remote(Enum)]
pub enum ChannelImportance {
    Min,
    Low,
    Default,
    High,
}

/// Every field defaults (`PresentOptions()`): unset means the library's choice.
pub type PresentOptions = qp_core::present::PresentOptions;
#[uniffi::remote(Record)]
pub struct PresentOptions {
    #[uniffi(default = false)]
    pub require_unlock_for_danger: bool,
    #[uniffi(default = None)]
    pub interruption_level: Option<InterruptionLevel>,
    #[uniffi(default = None)]
    pub sound: Option<NotificationSound>,
    #[uniffi(default = None)]
    pub channel_importance: Option<ChannelImportance>,
}

pub type IosPresentation = qp_core::present::ios::IosPresentation;
#[uniffi::remote(Record)]
pub struct IosPresentation {
    pub interruption_level: InterruptionLevel,
    pub sound: NotificationSound,
    pub badge: Option<u32>,
}

pub type AndroidRemoteInput = qp_core::present::android::AndroidRemoteInput;
#[uniffi::remote(Record)]
pub struct AndroidRemoteInput {
    pub result_key: String,
    pub label: String,
    pub choices: Vec<String>,
    pub allow_free_form_input: bool,
}

pub type AndroidAction = qp_core::present::android::AndroidAction;
#[uniffi::remote(Record)]
pub struct AndroidAction {
    pub action_id: String,
    pub title: String,
    pub style: OptionStyle,
    pub remote_input: Option<AndroidRemoteInput>,
    pub request_code: i32,
    pub mutable_intent: bool,
    pub authentication_required: bool,
}

pub type AndroidNotification = qp_core::present::android::AndroidNotification;
#[uniffi::remote(Record)]
pub struct AndroidNotification {
    pub channel_id: String,
    pub tag: String,
    pub notification_id: i32,
    pub title: String,
    pub text: String,
    pub sub_text: Option<String>,
    pub group: String,
    pub when_ms: i64,
    pub timeout_after_ms: i64,
    pub content_request_code: i32,
    pub actions: Vec<AndroidAction>,
}

// ---- the phone ----

pub type StoreMode = qp_core::store::StoreMode;
#[uniffi::remote(Enum)]
pub enum StoreMode {
    App,
    Extension,
}

pub type AnswerState = qp_core::store::AnswerState;
#[uniffi::remote(Enum)]
pub enum AnswerState {
    Queued,
    Sending,
    HandedOver,
    Answered,
    AlreadyResolved,
    Rejected,
}

pub type CommittedAnswer = qp_core::phone::CommittedAnswer;
#[uniffi::remote(Record)]
pub struct CommittedAnswer {
    pub question_id: String,
    pub state: AnswerState,
    pub is_new: bool,
    pub status: String,
}

pub type FlushReport = qp_core::sync::FlushReport;
#[uniffi::remote(Record)]
pub struct FlushReport {
    pub answered: u32,
    pub already_resolved: u32,
    pub rejected: u32,
    pub will_retry: u32,
    pub withdraw: Vec<String>,
    pub unauthorized: bool,
}

pub type SyncReport = qp_core::sync::SyncReport;
#[uniffi::remote(Record)]
pub struct SyncReport {
    pub pending: u32,
    pub withdraw: Vec<String>,
}

pub type FeedButton = qp_core::feed::FeedButton;
#[uniffi::remote(Record)]
pub struct FeedButton {
    pub value: String,
    pub label: String,
    pub style: OptionStyle,
}

pub type ChooseEntry = qp_core::feed::ChooseEntry;
#[uniffi::remote(Record)]
pub struct ChooseEntry {
    pub title: String,
    pub count: u32,
    pub options: Vec<FeedButton>,
    pub time_remaining: String,
}

/// A feed cell's reply field. `ReplyField` in Swift and Kotlin (the core's
/// `TextField`): a record named `TextField` would shadow SwiftUI's in every
/// file that imports both.
pub type ReplyField = qp_core::feed::TextField;
#[uniffi::remote(Record)]
pub struct ReplyField {
    pub placeholder: String,
    pub max_length: u32,
    pub hint: Option<String>,
    pub send_title: String,
    pub draft: Option<String>,
}

pub type MyAnswer = qp_core::feed::MyAnswer;
#[uniffi::remote(Record)]
pub struct MyAnswer {
    pub state: AnswerState,
    pub status: String,
    pub can_retry: bool,
}

pub type FeedCell = qp_core::feed::FeedCell;
#[uniffi::remote(Record)]
pub struct FeedCell {
    pub question_id: String,
    pub title: String,
    pub prompt: String,
    pub context: Option<String>,
    pub room_name: String,
    pub state: QuestionState,
    pub answerable: bool,
    pub buttons: Vec<FeedButton>,
    pub choose: Option<ChooseEntry>,
    pub text_field: Option<ReplyField>,
    pub resolution: Option<String>,
    pub room_hint: Option<String>,
    pub time_remaining: Option<String>,
    pub my_answer: Option<MyAnswer>,
}

// ---- pairing ----

pub type Platform = qp_core::protocol::device::Platform;
#[uniffi::remote(Enum)]
pub enum Platform {
    Ios,
    Android,
    Dev,
}

pub type ApnsEnvironment = qp_core::protocol::device::ApnsEnvironment;
#[uniffi::remote(Enum)]
pub enum ApnsEnvironment {
    Production,
    Sandbox,
}

/// `DeviceRegistration(platform: .ios, appId: bundleId)`: the push token
/// defaults to empty, which `signIn` and `registerDevice` read as the token
/// the OS last handed over (`updatePushToken`, kept by the core); the
/// person's language, the device key and the APNs environment default to
/// none (English, plain pushes, the server's APNs default).
pub type DeviceRegistration = qp_core::phone::DeviceRegistration;
#[uniffi::remote(Record)]
pub struct DeviceRegistration {
    pub platform: Platform,
    #[uniffi(default = "")]
    pub push_token: String,
    pub app_id: Option<String>,
    #[uniffi(default = None)]
    pub locale: Option<String>,
    #[uniffi(default = None)]
    pub public_key: Option<String>,
    #[uniffi(default = None)]
    pub apns_environment: Option<ApnsEnvironment>,
}

pub type SessionState = qp_core::phone::SessionState;
#[uniffi::remote(Enum)]
pub enum SessionState {
    SignedOut,
    SignedIn,
    Unauthorized,
}

pub type SessionStatus = qp_core::phone::SessionStatus;
#[uniffi::remote(Record)]
pub struct SessionStatus {
    pub state: SessionState,
    pub user_id: Option<String>,
    pub display_name: Option<String>,
    pub server_url: Option<String>,
    pub device_id: Option<String>,
    pub line: Option<String>,
    pub sign_out_pending: bool,
    pub sign_outs_dropped: u32,
}

pub type SignOutReport = qp_core::phone::SignOutReport;
#[uniffi::remote(Record)]
pub struct SignOutReport {
    pub device_removed: bool,
    pub token_revoked: bool,
    pub server_pending: bool,
    pub unsent_answers_dropped: u32,
    pub answers_with_the_system: u32,
}

pub type PairedAccount = qp_core::phone::PairedAccount;
#[uniffi::remote(Record)]
pub struct PairedAccount {
    pub server_url: String,
    pub user_id: String,
    pub display_name: String,
    pub device_id: Option<String>,
}

pub type PairErrorKind = qp_core::phone::PairErrorKind;
#[uniffi::remote(Enum)]
pub enum PairErrorKind {
    NotACode,
    NoServer,
    InvalidCode,
    TooManyAttempts,
    Unreachable,
    Refused,
    StorageFailed,
}

// ---- error kinds (the cases Swift and Kotlin switch on) ----

pub type ActionErrorKind = qp_core::answer::ActionErrorKind;
#[uniffi::remote(Enum)]
pub enum ActionErrorKind {
    UnknownAction,
    TextNotAllowed,
    EmptyText,
    TextTooLong,
    UnknownChoice,
}

pub type PayloadErrorKind = qp_core::payload::PayloadErrorKind;
#[uniffi::remote(Enum)]
pub enum PayloadErrorKind {
    NotJson,
    TooLarge,
    NotAnObject,
    MissingKey,
    WrongType,
    UnsupportedVersion,
    Invalid,
    NotQuestionProtocol,
    CannotOpen,
    Unsealed,
}

pub type StoreErrorKind = qp_core::store::StoreErrorKind;
#[uniffi::remote(Enum)]
pub enum StoreErrorKind {
    Locked,
    Corrupt,
    CannotOpen,
    Suspended,
    Other,
}

/// What a push carried (the core's `Push`, with named fields for Swift and
/// Kotlin pattern matching).
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Enum)]
pub enum DecodedPush {
    Question { question: PushQuestion },
    Resolved { notice: ResolvedPush },
}

impl From<qp_core::payload::Push> for DecodedPush {
    fn from(push: qp_core::payload::Push) -> Self {
        match push {
            qp_core::payload::Push::Question(question) => DecodedPush::Question { question },
            qp_core::payload::Push::Resolved(notice) => DecodedPush::Resolved { notice },
        }
    }
}

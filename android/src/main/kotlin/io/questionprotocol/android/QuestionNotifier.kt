// Builds and posts the notification of a question from an FCM data message,
// exactly as the core's Android spec says: actions in order, RemoteInput for
// typed replies and for choices, FLAG_MUTABLE only where RemoteInput needs it,
// request codes unique per question and action, one channel; a summary per
// room, the pending count as the number, a tap that opens the question.
package io.questionprotocol.android

import android.app.Notification
import android.app.NotificationChannel
import android.app.NotificationManager
import android.app.PendingIntent
import android.app.RemoteInput
import android.content.Context
import android.content.Intent
import android.graphics.drawable.Icon
import android.net.Uri
import android.os.Build
import io.questionprotocol.core.AndroidAction
import io.questionprotocol.core.AndroidChannel
import io.questionprotocol.core.AndroidNotification
import io.questionprotocol.core.BackgroundReport
import io.questionprotocol.core.ChannelImportance
import io.questionprotocol.core.DecodedPush
import io.questionprotocol.core.FlushReport
import io.questionprotocol.core.NotificationSound
import io.questionprotocol.core.Platform
import io.questionprotocol.core.PhoneCore
import io.questionprotocol.core.PresentOptions
import io.questionprotocol.core.QpException
import io.questionprotocol.core.ReconcilePlan
import io.questionprotocol.core.SessionState
import io.questionprotocol.core.SignOutReport
import io.questionprotocol.core.SyncReport
import io.questionprotocol.core.androidChannelWith
import io.questionprotocol.core.androidGroupSummary
import io.questionprotocol.core.androidNotification
import io.questionprotocol.core.androidNotificationId
import io.questionprotocol.core.decodeFcmPayload
import io.questionprotocol.core.fcmFallbackNotification
import io.questionprotocol.core.questionIdOfFcm
import io.questionprotocol.core.ResolutionPushAction
import io.questionprotocol.core.resolutionPushWithoutStore
import io.questionprotocol.core.androidRequestCode
import io.questionprotocol.core.fallbackNotification
import io.questionprotocol.core.phoneBudgets
import java.time.Instant
import kotlinx.coroutines.CancellationException
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withContext

object QuestionIntents {
    const val ACTION_ANSWER = "io.questionprotocol.action.ANSWER"
    const val EXTRA_QUESTION_ID = "io.questionprotocol.extra.QUESTION_ID"
    const val EXTRA_ACTION_ID = "io.questionprotocol.extra.ACTION_ID"
    const val EXTRA_RESULT_KEY = "io.questionprotocol.extra.RESULT_KEY"
    const val FALLBACK_TAG = "qp.fallback"
    /** On a room's summary: the room's name, to rebuild it after a withdrawal. */
    const val EXTRA_ROOM_NAME = "io.questionprotocol.extra.ROOM_NAME"

    /**
     * Tap-to-open's default: the app's launch activity, opened at
     * [questionId] (null: the feed). Read it back with [questionToOpen] in
     * the activity's `onCreate` and `onNewIntent`.
     */
    fun openQuestion(context: Context, questionId: String?): Intent? =
        context.packageManager.getLaunchIntentForPackage(context.packageName)?.apply {
            if (questionId != null) putExtra(EXTRA_QUESTION_ID, questionId)
        }

    /** The question a notification tap opened the app at, if any. */
    fun questionToOpen(intent: Intent?): String? = intent?.getStringExtra(EXTRA_QUESTION_ID)
}

/**
 * Call [onMessageReceived] (or [onDataMessage]) from
 * `FirebaseMessagingService.onMessageReceived` with `remoteMessage.data`. It
 * decodes and posts synchronously from the message itself; only a resolution
 * asks the server, within the core's budget (Android gives about 10
 * seconds). It never throws.
 *
 * @param core the shared core, or null when the store cannot be opened: the
 *   notification still shows, and the app syncs later.
 * @param receiver the app's [QuestionAnswerReceiver] subclass.
 * @param openApp the intent a tap opens; by default the app's launch
 *   activity at the question ([QuestionIntents.openQuestion]).
 * @param options how loud questions are: the channel's importance and sound
 *   (Android keeps what the channel was created with).
 */
/** The person's languages, most preferred first (`LocaleList`, API 24+). */
fun deviceLanguages(): List<String> =
    android.os.LocaleList.getDefault().toLanguageTags().split(",").filter { it.isNotEmpty() }

class QuestionNotifier(
    private val context: Context,
    private val core: PhoneCore?,
    private val receiver: Class<out QuestionAnswerReceiver>,
    private val smallIcon: Int,
    private val requireUnlockForDanger: Boolean = false,
    private val openApp: (questionId: String?) -> Intent? = { id -> QuestionIntents.openQuestion(context, id) },
    options: PresentOptions = PresentOptions(),
) {
    private val options = options.copy(requireUnlockForDanger = options.requireUnlockForDanger || requireUnlockForDanger)
    private val manager = checkNotNull(context.getSystemService(NotificationManager::class.java))

    init {
        // The core's log lines go to logcat (tag QuestionProtocol); once per
        // process, later calls do nothing. Never a crash: without the native
        // library the notifier still shows the generic notification.
        try {
            io.questionprotocol.core.initLogging()
        } catch (e: LinkageError) {
            reportGlueFailureSafely("notifier: the native library", e)
        }
    }

    /** What was done with a message. */
    sealed class Result {
        data class Posted(val questionId: String, val notificationId: Int) : Result()
        data class Withdrawn(val questionId: String) : Result()
        /** A resolution push the server did not confirm (still pending
         *  there, or not reachable now): the notification stays. */
        data class Kept(val questionId: String) : Result()
        data class Fallback(val reason: String) : Result()
        /** Recorded in the feed, but not shown: the person has notifications
         *  off for the app (on Android 13+, also: POST_NOTIFICATIONS was not
         *  granted). Ask for it from the app; the feed still has the question. */
        data class NotificationsBlocked(val questionId: String) : Result()
    }

    /**
     * What [refresh] did. Every step runs whatever the others did: signed
     * out, offline or with a revoked sign-in it reports, never throws.
     * @property flushed the outbox sent (null: the step failed, see [failures])
     * @property synced the server's pending questions pulled (null: failed)
     * @property plan the notifications on screen brought in line (null: failed)
     * @property failures each step's error, in order (`QpException.NotSignedIn`
     *   while signed out, `Network` offline, `Unauthorized` once the server
     *   refused the sign-in; any other exception too, never thrown)
     * @property state where the session stands afterwards (null: unreadable now)
     * @property statusLine what to tell the person, in their language, when
     *   the session needs them ("pair this phone again"), else null
     */
    data class Refreshed(
        val flushed: FlushReport?,
        val synced: SyncReport?,
        val plan: ReconcilePlan?,
        val failures: List<Exception>,
        val state: SessionState?,
        val statusLine: String?,
    )

    /**
     * At launch and on every return to the foreground (FCM delivers nothing
     * to a force-stopped app, and pushes are lossy): the core's one call
     * (`cameToForeground`: resume the store, queue again what a crash cut
     * short at launch, send the outbox, pull from the server, reconcile, in
     * that order), then its plan applied to the notifications on screen
     * ([reconcile]'s rules). On `Dispatchers.IO`, whatever the caller's
     * thread; it reports each step's failure, so it is safe signed out (a
     * pending offline sign-out is still told to the server), offline or
     * revoked. [QuestionLifecycle] calls it from the activity's `onStart`.
     */
    suspend fun refresh(): Refreshed = withContext(Dispatchers.IO) {
        val core = core ?: return@withContext Refreshed(null, null, null, emptyList(), null, null)
        // Every failure is caught, not only the core's QpException: a Rust
        // panic arrives as uniffi's InternalException, and applying the plan
        // may meet a platform exception; either would crash the app at start.
        // A cancellation still cancels.
        val failures = mutableListOf<Exception>()
        val report = try {
            core.cameToForeground(questionsOnScreen().map { it.tag })
        } catch (e: CancellationException) {
            throw e
        } catch (e: Exception) {
            failures += e
            null
        }
        report?.failures?.forEach { failures += it.error }
        val plan = report?.plan?.let { plan ->
            try {
                apply(core, plan)
                plan
            } catch (e: CancellationException) {
                throw e
            } catch (e: Exception) {
                failures += e
                null
            }
        }
        Refreshed(report?.flushed, report?.synced, plan, failures, report?.session?.state, report?.session?.line)
    }

    /**
     * Before the app goes to the background (the activity's `onStop`,
     * through [QuestionLifecycle]): the core's `enteringBackground` (on
     * Android the store stays open, its WAL written back). Its report counts
     * the answers still to send (schedule background work for them); null
     * without a core or when the store cannot say. On `Dispatchers.IO`.
     */
    suspend fun enteringBackground(): BackgroundReport? = withContext(Dispatchers.IO) {
        val core = core ?: return@withContext null
        try {
            core.enteringBackground(Platform.ANDROID)
        } catch (e: CancellationException) {
            throw e
        } catch (e: Exception) {
            null
        }
    }

    /**
     * Signs out (`core.signOut()`), then removes this library's
     * notifications ([removeAll]), whatever the sign-out did (also when it
     * throws): on a shared phone the next person must not see the previous
     * one's questions. The launcher's badge follows (it counts notifications).
     */
    suspend fun signOut(): SignOutReport {
        val core = checkNotNull(core) { "signing out needs the core" }
        try {
            return core.signOut()
        } finally {
            removeAll()
        }
    }

    /** Cancels every notification this library posted (questions, room
     *  summaries, answered lines, fallbacks: all on the core's channel),
     *  leaving the app's own. */
    fun removeAll() {
        val channel = core?.let { runCatching { it.androidChannel().id }.getOrNull() } ?: QUESTIONS_CHANNEL
        for (n in manager.activeNotifications) {
            if (n.notification.channelId == channel) manager.cancel(n.tag, n.id)
        }
    }

    companion object {
        /** The core's channel id (`androidChannel().id`), when no core can say. */
        private const val QUESTIONS_CHANNEL = "qp.questions"

        /**
         * The whole of `FirebaseMessagingService.onMessageReceived`: opens the
         * core with [core] and shows the message ([onDataMessage]). Never
         * throws (except a cancellation): a core that cannot be opened (a
         * Keystore that cannot decrypt after a restore, a store that cannot be
         * read, an `Error` from the app's callback, the native library failing
         * to load) is reported and the generic notification shown, since the
         * message's own words cannot be checked without it.
         */
        fun onMessageReceived(
            context: Context,
            data: Map<String, String>,
            receiver: Class<out QuestionAnswerReceiver>,
            smallIcon: Int,
            options: PresentOptions = PresentOptions(),
            core: () -> PhoneCore?,
        ): Result {
            // Everything but a cancellation: an Error too (the native library
            // failing to load is an UnsatisfiedLinkError; an app's callback
            // may throw one), as it would crash the service.
            val opened = try {
                core()
            } catch (e: CancellationException) {
                throw e
            } catch (e: Throwable) {
                reportGlueFailureSafely("onMessageReceived: opening the core", e)
                return try {
                    val notifier = QuestionNotifier(context, null, receiver, smallIcon, options = options)
                    notifier.postGeneric(null, notifier.questionIdOfFcmSafely(data))
                } catch (e: Throwable) {
                    reportGlueFailureSafely("onMessageReceived: generic notification", e)
                    Result.Fallback("failed")
                }
            }
            return try {
                QuestionNotifier(context, opened, receiver, smallIcon, options = options).onDataMessage(data)
            } catch (e: Throwable) {
                // onDataMessage never throws; only making the notifier can.
                reportGlueFailureSafely("onMessageReceived", e)
                Result.Fallback("failed")
            }
        }
    }

    /** Whether a question can reach the lock screen at all (false when the
     *  person turned notifications off or, on Android 13+, did not grant
     *  POST_NOTIFICATIONS). Never throws. */
    fun canNotify(): Boolean = manager.areNotificationsEnabled()

    /**
     * Decodes an FCM data message and shows it. Never throws (except a
     * cancellation): whatever fails, the core, the app's vault or key store
     * (their exceptions arrive as uniffi's `InternalException`), the
     * platform, an `Error` (the native library failing to load), is reported
     * and the generic notification shown instead.
     */
    fun onDataMessage(data: Map<String, String>): Result = try {
        show(data)
    } catch (e: CancellationException) {
        throw e
    } catch (e: Throwable) {
        reportGlueFailureSafely("onMessageReceived", e)
        try {
            postGeneric(null, questionIdOfFcmSafely(data))
        } catch (e: Throwable) {
            reportGlueFailureSafely("onMessageReceived: generic notification", e)
            Result.Fallback("failed")
        }
    }

    internal fun questionIdOfFcmSafely(data: Map<String, String>): String? = try {
        questionIdOfFcm(data)
    } catch (e: Exception) {
        null
    } catch (e: LinkageError) {
        null // no native library: the tap opens the app at its feed
    }

    private fun show(data: Map<String, String>): Result {
        val push = try {
            core?.receiveFcm(data) ?: decodeFcmPayload(data)
        } catch (e: QpException) {
            return postFallback(data, e.message ?: "undecodable")
        }
        return when (push) {
            is DecodedPush.Question -> {
                // Posting would be dropped silently (or, without the
                // permission on 13+, refused): say so instead.
                if (!canNotify()) return Result.NotificationsBlocked(push.question.id)
                // In the person's language: the core's, or the device's locales.
                val spec = core?.androidNotificationWith(push.question, Instant.now(), options)
                    ?: androidNotification(push.question, Instant.now(), options.requireUnlockForDanger, deviceLanguages())
                post(spec, push.question.room.name)
                Result.Posted(push.question.id, spec.notificationId)
            }
            is DecodedPush.Resolved -> {
                // A resolution by push is only a claim (whoever can inject
                // pushes could send one to hide a question): the core asks
                // the server within its budget and decides, as on iOS.
                val id = push.notice.id
                when (resolutionPush(id)) {
                    is ResolutionPushAction.Withdraw -> {
                        withdraw(id)
                        Result.Withdrawn(id)
                    }
                    // Pending here, or unconfirmed with no store to say:
                    // the notification stays as it is.
                    is ResolutionPushAction.KeepQuestion, is ResolutionPushAction.KeepUnconfirmed -> Result.Kept(id)
                }
            }
        }
    }

    /** The core's decision on a resolution push, the server asked within
     *  the core's budget (`phoneBudgets().extensionNetworkMs`, inside the
     *  ~10 s FCM gives `onMessageReceived`). Without a core, the core's rule
     *  for no store ([resolutionPushWithoutStore]), as on iOS. Blocks:
     *  `onMessageReceived` runs on a worker thread. */
    private fun resolutionPush(questionId: String): ResolutionPushAction {
        val core = core ?: return resolutionPushWithoutStore()
        return try {
            runBlocking { core.resolutionPush(questionId, phoneBudgets().extensionNetworkMs) }
        } catch (e: CancellationException) {
            throw e
        } catch (e: Exception) {
            // Never expected (the core decides an unreadable store itself):
            // a panic, reported, and the same rule as no store.
            reportGlueFailureSafely("resolution push", e)
            resolutionPushWithoutStore()
        }
    }

    /**
     * Brings the notifications on screen in line with the store: FCM delivers
     * nothing to a force-stopped app, and a push can be lost. [refresh] does
     * it at launch and on every return to the foreground (after the sync);
     * call it alone only where the store changed without one. Resolved
     * questions (and ones this device no longer holds) are withdrawn; pending
     * ones never shown here are posted. Returns the core's plan (null without
     * a core).
     */
    fun reconcile(): ReconcilePlan? {
        val core = core ?: return null
        val plan = core.reconcile(questionsOnScreen().map { it.tag })
        apply(core, plan)
        return plan
    }

    /** Does what the core's plan says: withdraws the resolved and the
     *  unknown, posts the missed (when notifications are allowed). */
    private fun apply(core: PhoneCore, plan: ReconcilePlan) {
        (plan.resolved.map { it.identifier } + plan.remove).forEach { withdraw(it) }
        if (canNotify()) {
            for (q in plan.post) post(core.androidNotificationWith(q, Instant.now(), options), q.room.name)
        }
    }

    /** Ours: tagged with the question id, under the id the core derives from it
     *  (a room's summary is tagged otherwise). */
    private fun questionsOnScreen() = manager.activeNotifications
        .filter { it.tag != null && it.id == androidNotificationId(it.tag) }

    /** Removes a question's notification (answered elsewhere, expired,
     *  cancelled), and its room's summary with the last of the room's. */
    fun withdraw(questionId: String) {
        val group = manager.activeNotifications
            .firstOrNull { it.tag == questionId && it.id == androidNotificationId(questionId) }?.notification?.group
        manager.cancel(questionId, androidNotificationId(questionId))
        if (group != null) updateSummary(group, null)
    }

    /** The core's questions channel (id, name and description; the app's
     *  importance and sound). */
    private fun ensureChannel(): String {
        val spec = core?.androidChannelWith(options) ?: androidChannelWith(options, deviceLanguages())
        if (manager.getNotificationChannel(spec.id) == null) manager.createNotificationChannel(channel(spec))
        return spec.id
    }

    private fun channel(spec: AndroidChannel): NotificationChannel {
        val importance = when (spec.importance) {
            ChannelImportance.MIN -> NotificationManager.IMPORTANCE_MIN
            ChannelImportance.LOW -> NotificationManager.IMPORTANCE_LOW
            ChannelImportance.DEFAULT -> NotificationManager.IMPORTANCE_DEFAULT
            ChannelImportance.HIGH -> NotificationManager.IMPORTANCE_HIGH
        }
        val channel = NotificationChannel(spec.id, spec.name, importance)
        channel.description = spec.description
        when (val sound = spec.sound) {
            is NotificationSound.Default -> {}
            is NotificationSound.Silent -> channel.setSound(null, null)
            is NotificationSound.Named -> channel.setSound(
                Uri.parse("android.resource://${context.packageName}/raw/${sound.name}"),
                Notification.AUDIO_ATTRIBUTES_DEFAULT,
            )
        }
        return channel
    }

    /**
     * Posts (or replaces, or with none left cancels) the summary of [group]:
     * Android bundles the room's questions under it. Its lines are the
     * questions' texts on screen, newest first; [roomName] null: the name
     * the summary on screen carries.
     */
    private fun updateSummary(group: String, roomName: String?) {
        val current = manager.activeNotifications.firstOrNull {
            it.notification.group == group && it.notification.flags and Notification.FLAG_GROUP_SUMMARY != 0
        }
        val name = roomName ?: current?.notification?.extras?.getString(QuestionIntents.EXTRA_ROOM_NAME) ?: ""
        val lines = questionsOnScreen()
            .filter { it.notification.group == group }
            .sortedByDescending { it.notification.`when` }
            .map { it.notification.extras.getCharSequence(Notification.EXTRA_TEXT)?.toString() ?: "" }
        val summary = androidGroupSummary(group, name, lines)
        if (summary == null) {
            current?.let { manager.cancel(it.tag, it.id) }
            return
        }
        val style = Notification.InboxStyle().setSummaryText(summary.title)
        summary.lines.forEach { style.addLine(it) }
        val builder = Notification.Builder(context, summary.channelId)
            .setSmallIcon(smallIcon)
            .setContentTitle(summary.title)
            .setContentText(summary.lines.first())
            .setStyle(style)
            .setGroup(summary.group)
            .setGroupSummary(true)
            .setNumber(summary.number.toInt())
            .setOnlyAlertOnce(true)
            .setAutoCancel(true)
        builder.extras.putString(QuestionIntents.EXTRA_ROOM_NAME, name)
        contentIntent(null, summary.notificationId)?.let { builder.setContentIntent(it) }
        manager.notify(summary.tag, summary.notificationId, builder.build())
    }

    private fun contentIntent(questionId: String?, requestCode: Int): PendingIntent? =
        openApp(questionId)?.let {
            PendingIntent.getActivity(context, requestCode, it, PendingIntent.FLAG_IMMUTABLE or PendingIntent.FLAG_UPDATE_CURRENT)
        }

    internal fun action(spec: AndroidNotification, a: AndroidAction): Notification.Action {
        val intent = Intent(context, receiver)
            .setAction(QuestionIntents.ACTION_ANSWER)
            .putExtra(QuestionIntents.EXTRA_QUESTION_ID, spec.tag)
            .putExtra(QuestionIntents.EXTRA_ACTION_ID, a.actionId)
        a.remoteInput?.let { intent.putExtra(QuestionIntents.EXTRA_RESULT_KEY, it.resultKey) }
        // RemoteInput writes the reply into the intent: it must be mutable
        // (Android 12+). Plain buttons stay immutable.
        val flags = PendingIntent.FLAG_UPDATE_CURRENT or
            if (a.mutableIntent) PendingIntent.FLAG_MUTABLE else PendingIntent.FLAG_IMMUTABLE
        val pending = PendingIntent.getBroadcast(context, a.requestCode, intent, flags)
        val builder = Notification.Action.Builder(Icon.createWithResource(context, smallIcon), a.title, pending)
        // Android 12 (API 31) and later only; before it, the lock screen
        // cannot ask for the unlock, and the answer goes through as tapped.
        if (Build.VERSION.SDK_INT >= Build.VERSION_CODES.S) builder.setAuthenticationRequired(a.authenticationRequired)
        a.remoteInput?.let { ri ->
            val input = RemoteInput.Builder(ri.resultKey)
                .setLabel(ri.label)
                .setAllowFreeFormInput(ri.allowFreeFormInput)
            if (ri.choices.isNotEmpty()) input.setChoices(ri.choices.toTypedArray())
            builder.addRemoteInput(input.build())
        }
        return builder.build()
    }

    private fun post(spec: AndroidNotification, roomName: String) {
        ensureChannel()
        val builder = Notification.Builder(context, spec.channelId)
            .setSmallIcon(smallIcon)
            .setContentTitle(spec.title)
            .setContentText(spec.text)
            .setStyle(Notification.BigTextStyle().bigText(spec.text))
            .setGroup(spec.group)
            .setWhen(spec.whenMs)
            .setShowWhen(true)
            .setTimeoutAfter(spec.timeoutAfterMs)
            .setCategory(Notification.CATEGORY_MESSAGE)
            .setAutoCancel(true)
        spec.subText?.let { builder.setSubText(it) }
        // The pending count (the core's badge), for launchers that show one.
        core?.let { c -> runCatching { c.badgeCount() }.getOrNull()?.let { builder.setNumber(it.toInt()) } }
        contentIntent(spec.tag, spec.contentRequestCode)?.let { builder.setContentIntent(it) }
        for (a in spec.actions) builder.addAction(action(spec, a))
        manager.notify(spec.tag, spec.notificationId, builder.build())
        updateSummary(spec.group, roomName)
    }

    /** The generic words ("New question", "Open the app to answer."),
     *  needing no core: in place of [tag]'s question notification when given,
     *  else in the fallback's slot; a tap opens the app at [questionId].
     *  Without the native library, the same words from the copy generated at
     *  build time ([GenericWithoutNative]), in the fallback's slot. */
    internal fun postGeneric(tag: String?, questionId: String? = tag): Result.Fallback {
        val languages = deviceLanguages()
        try {
            val f = fallbackNotification(null, null, languages)
            val spec = androidChannelWith(options, languages)
            if (manager.getNotificationChannel(spec.id) == null) manager.createNotificationChannel(channel(spec))
            val code = questionId?.let { androidRequestCode(it, 0u) } ?: 0
            val id = tag?.let { androidNotificationId(it) } ?: 0
            notifyGeneric(spec.id, f.title, f.body, tag ?: QuestionIntents.FALLBACK_TAG, id, questionId, code)
        } catch (e: LinkageError) {
            // The ids are the core's to derive: in place of [tag]'s
            // notification when it is on screen (its id read back), else in
            // the fallback's slot; a tap opens the app.
            val onScreen = tag?.let { t -> manager.activeNotifications.firstOrNull { it.tag == t } }
            val lines = GenericWithoutNative.lines(languages)
            val channelId = GenericNotificationCopy.CHANNEL_ID
            if (manager.getNotificationChannel(channelId) == null) {
                manager.createNotificationChannel(
                    NotificationChannel(channelId, lines.channelName, GenericNotificationCopy.CHANNEL_IMPORTANCE)
                        .apply { description = lines.channelDescription },
                )
            }
            notifyGeneric(channelId, lines.title, lines.body, onScreen?.tag ?: QuestionIntents.FALLBACK_TAG,
                onScreen?.id ?: 0, questionId, 0)
        }
        return Result.Fallback("failed")
    }

    private fun notifyGeneric(channelId: String, title: String, body: String, tag: String, id: Int,
                              questionId: String?, requestCode: Int) {
        val builder = Notification.Builder(context, channelId)
            .setSmallIcon(smallIcon)
            .setContentTitle(title)
            .setContentText(body)
            .setAutoCancel(true)
        contentIntent(questionId, requestCode)?.let { builder.setContentIntent(it) }
        manager.notify(tag, id, builder.build())
    }

    private fun postFallback(data: Map<String, String>, reason: String): Result {
        // The message's words are the core's to read (and to refuse).
        val f = core?.fcmFallbackNotification(data)
            ?: fcmFallbackNotification(data, deviceLanguages())
        val channel = ensureChannel()
        val builder = Notification.Builder(context, channel)
            .setSmallIcon(smallIcon)
            .setContentTitle(f.title)
            .setContentText(f.body)
            .setAutoCancel(true)
        // A tap opens the app at the question the message names, when it
        // names one (a sealed push this phone could not open still does).
        contentIntent(questionIdOfFcm(data), 0)?.let { builder.setContentIntent(it) }
        manager.notify(QuestionIntents.FALLBACK_TAG, 0, builder.build())
        return Result.Fallback(reason)
    }
}

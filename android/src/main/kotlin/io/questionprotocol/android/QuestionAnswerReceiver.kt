// Turns a tapped action or a typed reply into a committed answer, updates the
// notification at once (no endless spinner), then tries to deliver it within
// the receiver's allowance (goAsync) and shows the outcome in the core's
// words ("Approve, by you"); what could not be sent goes to background work.
// All of it after goAsync, off the main thread; nothing it meets crashes the
// process (a failure is reported and the generic notification shown).
package io.questionprotocol.android

import android.app.Notification
import android.app.NotificationManager
import android.app.PendingIntent
import android.app.RemoteInput
import android.content.BroadcastReceiver
import android.content.Context
import android.content.Intent
import io.questionprotocol.core.ActionErrorKind
import io.questionprotocol.core.CommittedAnswer
import io.questionprotocol.core.PhoneCore
import io.questionprotocol.core.PresentOptions
import io.questionprotocol.core.QpException
import io.questionprotocol.core.androidNotificationId
import io.questionprotocol.core.phoneBudgets
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeoutOrNull

/**
 * Subclass it, return the shared core from [core] and register it in the
 * manifest (not exported). An answer that could not be delivered at once is
 * left to [QuestionFlushJob], which the library schedules ([scheduleFlush]).
 */
abstract class QuestionAnswerReceiver : BroadcastReceiver() {
    companion object {
        /** A receiver may run about 10 s, goAsync included: the core's
         *  answer delivery budget (`phoneBudgets()`, 8 s). */
        val DELIVERY_BUDGET_MS: Long get() = phoneBudgets().answerDeliveryMs.toLong()
    }

    abstract fun core(context: Context): PhoneCore

    /** Background flushing, called when the answer could not be delivered
     *  at once: the library's [QuestionFlushJob] by default. */
    open fun scheduleFlush(context: Context) {
        QuestionFlushJob.schedule(context)
    }

    /** Runs everything after `goAsync` off the main thread: the store,
     *  the Keystore, the delivery attempt (tests may run it inline). */
    open fun runInBackground(work: () -> Unit) {
        Thread(work, "qp-deliver").start()
    }

    /** The icon of the updated notification. */
    abstract val smallIcon: Int

    /** What a tap on "Open the app to finish your answer" opens: by default
     *  the app's launch activity at the question ([QuestionIntents.openQuestion];
     *  the same as the notifier's `openApp`). */
    open fun openApp(context: Context, questionId: String): Intent? =
        QuestionIntents.openQuestion(context, questionId)

    /** What happened to the last intent (for tests and logging). */
    @Volatile
    var lastOutcome: Outcome? = null
        private set

    sealed class Outcome {
        data class Committed(val answer: CommittedAnswer) : Outcome()
        data class NeedsApp(val message: String) : Outcome()
        data object Ignored : Outcome()
    }

    override fun onReceive(context: Context, intent: Intent) {
        if (intent.action != QuestionIntents.ACTION_ANSWER) return
        val questionId = intent.getStringExtra(QuestionIntents.EXTRA_QUESTION_ID) ?: return
        val actionId = intent.getStringExtra(QuestionIntents.EXTRA_ACTION_ID) ?: return
        val key = intent.getStringExtra(QuestionIntents.EXTRA_RESULT_KEY)
        val typed = key?.let { RemoteInput.getResultsFromIntent(intent)?.getCharSequence(it)?.toString() }
        // goAsync first: onReceive runs on the main thread, and everything
        // after this (loading the library, opening SQLite, the Keystore in a
        // cold process, committing) is disk work. Null when called outside a
        // real broadcast (tests call onReceive).
        val pending: PendingResult? = goAsync()
        runInBackground {
            try {
                answer(context, questionId, actionId, typed)
            } catch (e: Throwable) {
                // Anything, the app's vault or key store included (uniffi
                // turns their exceptions into InternalException), an Error
                // too (the native library failing to load, an app callback's):
                // uncaught on this thread it would kill the process. Reported,
                // and the person told to finish in the app.
                reportFailure("answer receiver", e)
                runCatching { notifyGeneric(context, questionId) }
                    .onFailure { reportFailure("answer receiver: generic notification", it) }
                lastOutcome = Outcome.NeedsApp(e.javaClass.name)
            } finally {
                pending?.finish()
            }
        }
    }

    /** Off the main thread: commit locally first (the receiver has ~10 s and
     *  no network guarantee), update the notification, then try to deliver. */
    private fun answer(context: Context, questionId: String, actionId: String, typed: String?) {
        // The receiver may run in a fresh process: logcat first (once).
        io.questionprotocol.core.initLogging()
        val outcome = try {
            Outcome.Committed(core(context).answerAction(questionId, actionId, typed))
        } catch (e: QpException.Action) {
            if (e.kind == ActionErrorKind.UNKNOWN_ACTION) Outcome.Ignored else Outcome.NeedsApp(e.detail)
        } catch (e: QpException) {
            Outcome.NeedsApp(e.message ?: e.toString())
        }
        lastOutcome = outcome
        if (outcome !is Outcome.Committed) return update(context, questionId, outcome)
        // Committed: whatever fails after this (the notification's update
        // included) leaves the answer queued, so the retry job is
        // scheduled unless it went out; otherwise it waited for the next launch.
        var delivered = false
        try {
            update(context, questionId, outcome)
            delivered = deliverNow(context, questionId)
        } finally {
            if (!delivered) scheduleFlush(context)
        }
    }

    /** Where a failure the system's callback cannot throw goes: the core's
     *  log (logcat) by default; override to send it to the app's crash
     *  reporting too. */
    open fun reportFailure(site: String, error: Throwable) {
        reportGlueFailureSafely(site, error)
    }

    /** The generic words in place of the question's notification (no core
     *  at hand, or none that works), a tap opening the app at the question. */
    private fun notifyGeneric(context: Context, questionId: String) {
        QuestionNotifier(context, null, javaClass, smallIcon, openApp = { id -> openApp(context, id ?: questionId) })
            .postGeneric(questionId)
    }

    /** Sends what is queued within [DELIVERY_BUDGET_MS] and shows where the
     *  answer stands, in the core's line (`answeredLine`): "You answered:
     *  Approve" once the server has it, else where it waits. True when
     *  nothing is left to send. */
    private fun deliverNow(context: Context, questionId: String): Boolean {
        val core = core(context)
        // The answer is committed: whatever fails now (the app's vault read
        // for the send included) leaves it queued for the retry job, and
        // the notification keeps saying where it stands.
        val report = try {
            runBlocking { withTimeoutOrNull(DELIVERY_BUDGET_MS) { core.flush() } }
        } catch (e: kotlinx.coroutines.CancellationException) {
            throw e
        } catch (e: Throwable) {
            if (e !is QpException) reportGlueFailureSafely("answer receiver: sending", e)
            null
        }
        val text = try {
            core.answeredLine(questionId)
        } catch (e: Throwable) {
            null
        }
        if (text != null) notifyQuiet(context, questionId, text)
        return report != null && report.willRetry == 0u
    }

    /** Replaces the notification with a quiet one that says where things
     *  stand, in the core's words ("Approve: queued, sends when online"). */
    private fun update(context: Context, questionId: String, outcome: Outcome) {
        val core = core(context)
        val text = when (outcome) {
            is Outcome.Committed -> outcome.answer.status
            is Outcome.NeedsApp -> core.openAppToFinish()
            Outcome.Ignored -> return
        }
        notifyQuiet(context, questionId, text, open = outcome is Outcome.NeedsApp)
    }

    /** `open`: a tap opens the app at the question (the deep link). */
    private fun notifyQuiet(context: Context, questionId: String, text: String, open: Boolean = false) {
        val manager = checkNotNull(context.getSystemService(NotificationManager::class.java))
        val builder = Notification.Builder(context, core(context).androidChannel().id)
            .setSmallIcon(smallIcon)
            .setContentText(text)
            .setOnlyAlertOnce(true)
            .setTimeoutAfter(60_000)
        // The question's own tap request code (the core's), so this is the
        // same PendingIntent the question's notification had.
        val requestCode = if (!open) null else try {
            core(context).question(questionId)?.let {
                core(context).androidNotificationWith(it, java.time.Instant.now(), PresentOptions()).contentRequestCode
            }
        } catch (e: QpException) {
            null
        }
        if (requestCode != null) {
            openApp(context, questionId)?.let {
                builder.setContentIntent(PendingIntent.getActivity(context, requestCode, it,
                    PendingIntent.FLAG_IMMUTABLE or PendingIntent.FLAG_UPDATE_CURRENT))
                builder.setAutoCancel(true)
            }
        }
        manager.notify(questionId, androidNotificationId(questionId), builder.build())
    }
}

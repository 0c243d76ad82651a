// The app's side of the lifecycle on Android, the counterpart of iOS's
// QPAppLifecycle: the core's two calls, made from the activity's onStart and
// onStop. The core decides the steps and their order (resume, requeue at
// launch, send, sync, reconcile; before the background, what is left to
// send); this class only runs them off the main thread and applies the plan.
package io.questionprotocol.android

import io.questionprotocol.core.BackgroundReport
import io.questionprotocol.core.PhoneCore
import kotlinx.coroutines.CancellationException
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Deferred
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.SupervisorJob
import kotlinx.coroutines.async
import kotlinx.coroutines.withContext

/**
 * Call [onStart] from the activity's `onStart` (at launch and at every
 * return to the foreground) and [onStop] from its `onStop`; apps no longer
 * send, sync or reconcile themselves.
 *
 *     val lifecycle = QuestionLifecycle(scheduleFlush = { QuestionFlushJob.schedule(ctx) }) {
 *         QuestionNotifier(ctx, App.core(ctx), AnswerReceiver::class.java, R.drawable.ic_question)
 *     }
 *
 * @param scope where the calls run (`Dispatchers.IO` by default, or the
 *   activity's `lifecycleScope`); the core's calls never block its thread.
 * @param scheduleFlush background work for answers still unsent when the
 *   app goes to the background ([QuestionFlushJob.schedule]).
 * @param notifier makes the notifier (and opens the core) inside [scope],
 *   off the main thread.
 */
class QuestionLifecycle(
    private val scope: CoroutineScope = CoroutineScope(SupervisorJob() + Dispatchers.IO),
    private val scheduleFlush: () -> Unit = {},
    private val notifier: () -> QuestionNotifier,
) {
    /** The core's `cameToForeground`, its plan applied to the notifications
     *  on screen ([QuestionNotifier.refresh]). Never fails: what each step
     *  did (its `statusLine` to show, when the session needs the person). */
    fun onStart(): Deferred<QuestionNotifier.Refreshed> = scope.async {
        try {
            notifier().refresh()
        } catch (e: CancellationException) {
            throw e
        } catch (e: Throwable) { // the app's core factory (vault, key store, store) or the native library
            reportGlueFailureSafely("coming to the foreground", e)
            val failure = e as? Exception ?: RuntimeException(e.javaClass.name)
            QuestionNotifier.Refreshed(null, null, null, listOf(failure), null, null)
        }
    }

    /** The core's `enteringBackground`; with answers still unsent, the
     *  app's background work is scheduled ([scheduleFlush]). Null when the
     *  core could not be opened (reported, never thrown). */
    fun onStop(): Deferred<BackgroundReport?> = scope.async {
        try {
            notifier().enteringBackground()?.also { if (it.unsentAnswers > 0u) scheduleFlush() }
        } catch (e: CancellationException) {
            throw e
        } catch (e: Throwable) {
            reportGlueFailureSafely("going to the background", e)
            null
        }
    }

    companion object {
        /**
         * The body of a background job ([QuestionFlushJob] runs it): sends what the outbox holds, on
         * `Dispatchers.IO`. Never throws (except a cancellation): a core that
         * cannot be opened (the app's vault or key store throwing) or a failed
         * send is reported. True when nothing is left to send (the job's
         * success), false to have it retried.
         */
        suspend fun backgroundFlush(core: () -> PhoneCore): Boolean = withContext(Dispatchers.IO) {
            try {
                core().flush().willRetry == 0u
            } catch (e: CancellationException) {
                throw e
            } catch (e: Throwable) { // an Error too: the native library, an app callback
                reportGlueFailureSafely("background flush", e)
                false
            }
        }
    }
}

package io.questionprotocol.android

import android.app.job.JobInfo
import android.app.job.JobParameters
import android.app.job.JobScheduler
import android.app.job.JobService
import android.content.ComponentName
import android.content.Context
import io.questionprotocol.core.PhoneCore
import io.questionprotocol.core.QpException
import kotlinx.coroutines.CancellationException
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.Job
import kotlinx.coroutines.SupervisorJob
import kotlinx.coroutines.cancelChildren
import kotlinx.coroutines.launch

/**
 * Sends the answers still in the outbox once the device has a network: a
 * `JobScheduler` job (framework API, no extra dependency) that the library
 * schedules itself when an answer could not be delivered at once. It runs
 * the core's flush; when an answer is left to retry (the server still
 * unreachable, a 5xx), it asks the system to run it again with its backoff.
 * What is retried and when an answer is final stay the core's rules.
 *
 * The app declares the service in its manifest
 * (`android:permission="android.permission.BIND_JOB_SERVICE"`, not exported)
 * and tells the job where its phone is, once per process (in
 * `Application.onCreate`, which runs before the job in a fresh process):
 * `QuestionFlushJob.phone = { context -> MyApp.core(context) }`.
 */
open class QuestionFlushJob : JobService() {
    private val scope = CoroutineScope(SupervisorJob() + Dispatchers.IO)
    /** The flush in progress, for tests to await. */
    @Volatile var running: Job? = null
        private set

    override fun onStartJob(params: JobParameters?): Boolean {
        // The core opens SQLite and the app's vault: never on the main
        // thread, where the system calls this, and never a crash: a phone
        // that cannot be opened (a vault that cannot decrypt, the phone not
        // set yet in this process, an Error from the app's callback or the
        // native library failing to load) is reported and the job runs
        // again later.
        running = scope.launch {
            val again = try {
                val core = phone?.invoke(applicationContext)
                    ?: throw IllegalStateException("QuestionFlushJob.phone is not set in this process (set it in Application.onCreate)")
                val report = core.flush()
                // A 401 waits for the person to pair again, not for the network.
                report.willRetry > 0u && !report.unauthorized
            } catch (e: CancellationException) {
                throw e
            } catch (e: QpException.NotSignedIn) {
                false
            } catch (e: Throwable) {
                reportGlueFailureSafely("QuestionFlushJob", e)
                true
            }
            jobFinished(params, again)
        }
        return true
    }

    override fun onStopJob(params: JobParameters?): Boolean {
        scope.coroutineContext.cancelChildren()
        return true // the answers are still queued: run again
    }

    companion object {
        /** The job's id in the app's JobScheduler namespace. */
        const val JOB_ID = 0x51_50_0001
        /** The first retry's delay; the system doubles it each time. */
        const val BACKOFF_MS = 30_000L

        /** Where the job finds the app's phone (set at process start). */
        @Volatile @JvmStatic var phone: ((Context) -> PhoneCore)? = null

        /** Schedules the flush for when a network is available (replacing a
         *  pending one), kept across a reboot: an answer queued before the
         *  phone restarts is still sent. True when the system took it; never
         *  throws (the system refuses a job past its limit with an exception). */
        @JvmStatic
        fun schedule(context: Context): Boolean = try {
            val scheduler = context.getSystemService(JobScheduler::class.java)
            val job = JobInfo.Builder(JOB_ID, ComponentName(context, QuestionFlushJob::class.java))
                .setRequiredNetworkType(JobInfo.NETWORK_TYPE_ANY)
                .setBackoffCriteria(BACKOFF_MS, JobInfo.BACKOFF_POLICY_EXPONENTIAL)
                // Persisting needs RECEIVE_BOOT_COMPLETED (the library's
                // manifest declares it; the system throws without it): an app
                // that removed it from its merged manifest still gets the job,
                // until the next reboot.
                .setPersisted(holdsBootPermission(context))
                .build()
            scheduler != null && scheduler.schedule(job) == JobScheduler.RESULT_SUCCESS
        } catch (e: Exception) {
            reportGlueFailureSafely("QuestionFlushJob.schedule", e)
            false
        }

        private fun holdsBootPermission(context: Context): Boolean =
            context.checkSelfPermission(android.Manifest.permission.RECEIVE_BOOT_COMPLETED) ==
                android.content.pm.PackageManager.PERMISSION_GRANTED
    }
}

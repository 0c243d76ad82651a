// The library's own retry job under Robolectric: scheduled with a network
// constraint, it runs the core's flush and asks to run again while an
// answer waits; against the real `qp serve` (android/run-tests) the
// answer then reaches the server and the job is done.
package io.questionprotocol.android

import android.app.job.JobInfo
import android.app.job.JobScheduler
import android.content.Context
import io.questionprotocol.core.*
import kotlinx.coroutines.runBlocking
import org.json.JSONObject
import org.junit.Assert.assertEquals
import org.junit.Assert.assertFalse
import org.junit.Assert.assertNotEquals
import org.junit.Assert.assertNotNull
import org.junit.Assert.assertTrue
import org.junit.Assume.assumeTrue
import org.junit.Before
import org.junit.Test
import org.junit.runner.RunWith
import org.robolectric.Robolectric
import org.robolectric.RobolectricTestRunner
import org.robolectric.RuntimeEnvironment
import org.robolectric.Shadows.shadowOf
import java.io.File
import java.net.HttpURLConnection
import java.net.URL
import java.nio.file.Files

@RunWith(RobolectricTestRunner::class)
class QuestionFlushJobTest {
    init { HttpUrlConnectionTransport.install() }

    private lateinit var context: Context
    private lateinit var dir: File

    @Before
    fun setUp() {
        context = RuntimeEnvironment.getApplication()
        dir = Files.createTempDirectory("qp-job").toFile()
    }

    private fun runJob(): Pair<Boolean, Boolean> {
        val service = Robolectric.setupService(QuestionFlushJob::class.java)
        assertTrue(service.onStartJob(null))
        runBlocking { service.running!!.join() }
        val shadow = shadowOf(service)
        return shadow.isJobFinished to shadow.isRescheduleNeeded
    }

    @Test
    fun theJobIsScheduledForWhenANetworkIsAvailableAndKeptAcrossAReboot() {
        // An app holds RECEIVE_BOOT_COMPLETED through the library's manifest
        // (merged into its own; see theLibrarysManifestDeclaresTheBootPermission).
        shadowOf(RuntimeEnvironment.getApplication()).grantPermissions(android.Manifest.permission.RECEIVE_BOOT_COMPLETED)
        assertTrue(QuestionFlushJob.schedule(context))
        val job = context.getSystemService(JobScheduler::class.java)!!.getPendingJob(QuestionFlushJob.JOB_ID)
        assertNotNull(job)
        @Suppress("DEPRECATION")
        assertEquals(JobInfo.NETWORK_TYPE_ANY, job!!.networkType)
        assertEquals(QuestionFlushJob::class.java.name, job.service.className)
        assertEquals(JobInfo.BACKOFF_POLICY_EXPONENTIAL, job.backoffPolicy)
        assertTrue("persisted: queued answers are retried after a reboot", job.isPersisted)
    }

    /** An app that removed the permission from its merged manifest: the
     *  system would refuse a persisted job (an exception); it gets one that
     *  lasts until the next reboot. */
    @Test
    fun withoutTheBootPermissionTheJobIsStillScheduled() {
        shadowOf(RuntimeEnvironment.getApplication()).denyPermissions(android.Manifest.permission.RECEIVE_BOOT_COMPLETED)
        assertTrue(QuestionFlushJob.schedule(context))
        val job = context.getSystemService(JobScheduler::class.java)!!.getPendingJob(QuestionFlushJob.JOB_ID)
        assertEquals(false, job!!.isPersisted)
        @Suppress("DEPRECATION")
        assertEquals(JobInfo.NETWORK_TYPE_ANY, job.networkType)
    }

    /** The manifest an AAR build merges into the app's declares the
     *  permission a persisted job needs (AGP's merger cannot run here: the
     *  library's manifest is read as the merge takes it). */
    @Test
    fun theLibrarysManifestDeclaresTheBootPermission() {
        val manifest = File("src/main/AndroidManifest.xml")
        val doc = javax.xml.parsers.DocumentBuilderFactory.newInstance().apply { isNamespaceAware = true }
            .newDocumentBuilder().parse(manifest)
        val android = "http://schemas.android.com/apk/res/android"
        val permissions = doc.documentElement.getElementsByTagName("uses-permission")
        val names = (0 until permissions.length).map {
            (permissions.item(it) as org.w3c.dom.Element).getAttributeNS(android, "name")
        }
        assertTrue("$names", "android.permission.RECEIVE_BOOT_COMPLETED" in names)
    }

    /** Issue 48 (4): an Error from the app's callback (not an Exception)
     *  is reported and the job runs again; uncaught it would kill the process. */
    @Test
    fun anErrorFromTheAppsCallbackIsReportedAndTheJobRunsAgain() {
        QuestionFlushJob.phone = { throw StackOverflowError("the app's phone factory") }
        assertEquals(true to true, runJob())
    }

    @Test
    fun aReceiverThatCannotDeliverSchedulesTheJob() {
        val receiver = object : QuestionAnswerReceiver() {
            override fun core(context: Context): PhoneCore = error("not used")
            override val smallIcon: Int = android.R.drawable.ic_dialog_info
        }
        receiver.scheduleFlush(context)
        assertNotNull(context.getSystemService(JobScheduler::class.java)!!.getPendingJob(QuestionFlushJob.JOB_ID))
    }

    @Test
    fun withNoPhoneTheJobRunsAgainLater() {
        QuestionFlushJob.phone = null
        assertEquals(true to true, runJob())
    }

    @Test
    fun aPhoneThatCannotBeOpenedIsReportedAndTheJobRunsAgainInsteadOfCrashing() {
        // A Keystore that cannot decrypt after a restore: the app's callback throws.
        var calledOn: Thread? = null
        QuestionFlushJob.phone = { calledOn = Thread.currentThread(); throw java.security.GeneralSecurityException("cannot decrypt") }
        assertEquals(true to true, runJob())
        assertNotEquals("the phone is opened off the main thread", android.os.Looper.getMainLooper().thread, calledOn)
    }

    @Test
    fun anAnswerTheServerCannotTakeYetIsRetriedThenDelivered() {
        assumeTrue("run through android/run-tests", System.getenv("QP_E2E_URL") != null)
        fun env(k: String) = System.getenv(k)!!
        val (asked, q) = http("POST", "/api/agent/rooms/OPS123/questions", env("QP_E2E_AGENT_TOKEN"),
            """{"prompt":"Retry job: deploy?","target_user_id":"${env("QP_E2E_USER")}",
               "options":[{"value":"yes","label":"Yes","style":"primary"},{"value":"no","label":"No"}]}""")
        assertEquals(201, asked)
        val id = q.getString("id")
        val store = File(dir, "phone.sqlite").path
        val token = StaticToken(env("QP_E2E_USER_TOKEN"))
        // The answer is committed while the server cannot be reached.
        val offline = PhoneCore(store, StoreMode.APP, env("QP_E2E_DEAD_URL"), env("QP_E2E_USER"), token, listOf())
        offline.receiveFcm(encodeFcmPayload(q.toString()).data)
        offline.answerAction(id, "qp.v.yes", null)
        QuestionFlushJob.phone = { offline }
        val (finished, again) = runJob()
        assertTrue(finished)
        assertTrue("an answer waits: run again", again)
        offline.close()

        // The network is back: the job sends it, once, and is done.
        val online = PhoneCore(store, StoreMode.APP, env("QP_E2E_URL"), env("QP_E2E_USER"), token, listOf())
        online.retry(id)
        QuestionFlushJob.phone = { online }
        val (done, more) = runJob()
        assertTrue(done)
        assertFalse(more)
        assertEquals(AnswerState.ANSWERED, online.answerStatus(id)!!.state)
        val (_, server) = http("GET", "/api/agent/questions/$id", env("QP_E2E_AGENT_TOKEN"))
        assertEquals("answered", server.getString("state"))
        online.close()
    }

    private fun http(method: String, path: String, token: String, body: String? = null): Pair<Int, JSONObject> {
        val c = URL(System.getenv("QP_E2E_URL") + path).openConnection() as HttpURLConnection
        c.requestMethod = method
        c.setRequestProperty("Authorization", "Bearer $token")
        if (body != null) {
            c.doOutput = true
            c.setRequestProperty("Content-Type", "application/json")
            c.outputStream.use { it.write(body.toByteArray()) }
        }
        val status = c.responseCode
        val text = (if (status < 400) c.inputStream else c.errorStream)?.bufferedReader()?.readText().orEmpty()
        return status to (if (text.startsWith("{")) JSONObject(text) else JSONObject())
    }
}

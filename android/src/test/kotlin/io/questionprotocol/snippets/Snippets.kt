// The README's Kotlin code, compiled with the suite (and the service,
// receiver, activity and session driven by PresentationTest and
// SessionTest). The regions between `// snippet: NAME` and `// end snippet`
// are the README's Kotlin blocks, verbatim (scripts/check-snippets compares
// them).
package io.questionprotocol.snippets

import android.Manifest
import android.app.Activity
import android.app.Application
import android.content.Context
import android.content.pm.PackageManager
import android.os.Build
import android.os.Bundle
import android.security.keystore.KeyGenParameterSpec
import android.security.keystore.KeyProperties
import android.util.Base64
import android.util.Log
import com.google.firebase.messaging.FirebaseMessaging
import com.google.firebase.messaging.FirebaseMessagingService
import com.google.firebase.messaging.RemoteMessage
import io.questionprotocol.android.HttpUrlConnectionTransport
import io.questionprotocol.android.QuestionAnswerReceiver
import io.questionprotocol.android.QuestionFlushJob
import io.questionprotocol.android.QuestionIntents
import io.questionprotocol.android.QuestionLifecycle
import io.questionprotocol.android.QuestionNotifier
import io.questionprotocol.android.deviceLanguages
import io.questionprotocol.core.DeviceKeyStore
import io.questionprotocol.core.DeviceRegistration
import io.questionprotocol.core.PairedAccount
import io.questionprotocol.core.PhoneCore
import io.questionprotocol.core.Platform
import io.questionprotocol.core.StoreMode
import io.questionprotocol.core.TokenVault
import java.io.File
import java.security.KeyStore
import javax.crypto.AEADBadTagException
import javax.crypto.Cipher
import javax.crypto.KeyGenerator
import javax.crypto.SecretKey
import javax.crypto.spec.GCMParameterSpec
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.Job
import kotlinx.coroutines.SupervisorJob
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking

// snippet: android-keystore
class Keystore(ctx: Context) : TokenVault {   // the core's tokens, sealed with an AES-GCM key kept in the Android Keystore
    private val prefs = ctx.getSharedPreferences("qp", Context.MODE_PRIVATE)   // no backups: "qp.xml" (manifest below)
    private val key: SecretKey = synchronized(Keystore::class.java) { existingKey() ?: newKey() }
    override fun saveToken(userId: String, token: String) {
        val cipher = Cipher.getInstance("AES/GCM/NoPadding").apply { init(Cipher.ENCRYPT_MODE, key) }   // the Keystore picks the IV
        cipher.updateAAD(userId.toByteArray())   // bound to its slot: a value moved to another slot does not open
        val sealed = cipher.iv + cipher.doFinal(token.toByteArray())
        prefs.edit().putString(userId, Base64.encodeToString(sealed, Base64.NO_WRAP)).commit()
    }
    override fun token(userId: String): String? {
        val sealed = prefs.getString(userId, null)?.let { Base64.decode(it, Base64.NO_WRAP) } ?: return null
        return try {
            val cipher = Cipher.getInstance("AES/GCM/NoPadding")
            cipher.init(Cipher.DECRYPT_MODE, key, GCMParameterSpec(128, sealed, 0, IV_BYTES))
            cipher.updateAAD(userId.toByteArray())
            String(cipher.doFinal(sealed, IV_BYTES, sealed.size - IV_BYTES))
        } catch (e: AEADBadTagException) {
            // Sealed by a key this phone does not have (the file restored from a backup, or moved to a new phone: the
            // key never leaves the old phone's Keystore): forgotten, the person pairs again. Any other failure (the
            // Keystore busy or locked now) throws on: the library reports it and keeps the token for the next try.
            Log.w("qp", "a token sealed by another key (restored from a backup?): forgotten", e)
            forgetToken(userId)
            null
        }
    }
    override fun forgetToken(userId: String) { prefs.edit().remove(userId).commit() }
    private fun existingKey() = KeyStore.getInstance("AndroidKeyStore").apply { load(null) }.getKey(ALIAS, null) as SecretKey?
    private fun newKey(): SecretKey = KeyGenerator.getInstance(KeyProperties.KEY_ALGORITHM_AES, "AndroidKeyStore").apply {
        init(KeyGenParameterSpec.Builder(ALIAS, KeyProperties.PURPOSE_ENCRYPT or KeyProperties.PURPOSE_DECRYPT)
            .setBlockModes(KeyProperties.BLOCK_MODE_GCM).setEncryptionPaddings(KeyProperties.ENCRYPTION_PADDING_NONE)
            .setKeySize(256).build())
    }.generateKey()
    private companion object { const val ALIAS = "qp.tokens"; const val IV_BYTES = 12 }
}
// end snippet

// snippet: android-device-key
class KeystoreDeviceKey(ctx: Context) : DeviceKeyStore {   // the device's end-to-end key (32 bytes), beside the tokens
    private val vault = Keystore(ctx)   // excluded from backups with them: a restored phone makes a new key
    override fun loadDeviceKey(): ByteArray? = vault.token(SLOT)?.let { Base64.decode(it, Base64.NO_WRAP) }
    override fun saveDeviceKey(key: ByteArray): Boolean =
        runCatching { vault.saveToken(SLOT, Base64.encodeToString(key, Base64.NO_WRAP)) }.isSuccess
    private companion object { const val SLOT = "app.device-key" }   // the app's own slot: the core's are "qp.…" and user ids
}
// end snippet

// snippet: android-sign-in
object AccountScreen {   // the app's account screen: sign in with the scanned pairing link, sign out
    // No FCM token in hand: the one onNewToken handed over (before pairing too) is registered with it.
    suspend fun signIn(core: PhoneCore, scanned: String, ctx: Context): PairedAccount =
        core.signIn(scanned, Build.MODEL, null, DeviceRegistration(Platform.ANDROID, appId = ctx.packageName,
            locale = deviceLanguages().firstOrNull(), publicKey = core.devicePublicKey()))   // sealed pushes
    suspend fun signOut(core: PhoneCore, ctx: Context): String? {
        val unsent = core.unsentAnswers()   // ask first if > 0: signing out drops what cannot be sent
        // Tries to send them, erases the store, forgets and revokes the token, and removes the library's
        // notifications (a shared phone: the next person sees none of the previous one's questions).
        val report = QuestionNotifier(ctx, core, AnswerReceiver::class.java, R.drawable.ic_question).signOut()
        return when {
            report.unsentAnswersDropped > 0u -> "${report.unsentAnswersDropped} of $unsent answers were not sent"
            report.serverPending -> "Signed out. This phone may get notifications until it is next online."
            else -> null
        }
    }
}
// end snippet

// snippet: android-core
object App {   // one core per process, from launch (signed in or not): the service, receiver and activities share it
    @Volatile var opened: PhoneCore? = null
    fun core(ctx: Context): PhoneCore = opened ?: synchronized(this) {
        // The core's requests go through the platform's HttpURLConnection: the network security config (user
        // and MDM CAs, pinning), the system proxy and a VPN apply. OkHttp or Ktor: register your own HttpTransport.
        HttpUrlConnectionTransport.install()
        opened ?: PhoneCore.openSession(File(ctx.noBackupFilesDir, "qp.sqlite").path, StoreMode.APP, Keystore(ctx),
            deviceLanguages(), deviceKeys = KeystoreDeviceKey(ctx)).also { opened = it }
    }
}
class QpApplication : Application() {   // <application android:name=".QpApplication">: first in every process
    override fun onCreate() {
        super.onCreate()
        QuestionFlushJob.phone = { App.core(it) }   // the library's retry job, alone in a fresh process, finds the phone
    }
}
// end snippet

// snippet: android-service
class QpMessagingService : FirebaseMessagingService() {          // Firebase stays these few lines
    override fun onMessageReceived(m: RemoteMessage) {
        // A tap opens the app's launch activity at the question (QuestionIntents.questionToOpen). Never throws: a core
        // that cannot open (a Keystore that cannot decrypt after a restore) shows the generic notification instead.
        QuestionNotifier.onMessageReceived(this, m.data, AnswerReceiver::class.java, R.drawable.ic_question) { App.core(this) }
    }
    override fun onNewToken(token: String) {   // before pairing too: kept, registered at sign-in and when it changes
        runBlocking { runCatching { App.core(this@QpMessagingService).updatePushToken(token) } }
    }
}
class AnswerReceiver : QuestionAnswerReceiver() {                 // <receiver android:exported="false"/>
    override fun core(context: Context) = App.core(context)
    // The receiver calls goAsync first, then, off the main thread, commits the answer, tries to send it at once within
    // its allowance (goAsync, 8 s) and updates the notification ("You answered: Approve"); what could not be sent is left to the
    // library's QuestionFlushJob (a JobScheduler job with a network constraint: <service android:name="io.questionprotocol.android.QuestionFlushJob"
    // android:permission="android.permission.BIND_JOB_SERVICE" android:exported="false"/>). A failure (the Keystore, the store) is
    // reported and the generic notification shown.
    override val smallIcon = R.drawable.ic_question
}
// end snippet

// snippet: android-foreground
object Foreground {   // MainActivity: onStart (at launch and at every return to the foreground) and onStop
    private val scope = CoroutineScope(SupervisorJob() + Dispatchers.IO)   // or the activity's lifecycleScope
    private fun lifecycle(ctx: Context) = QuestionLifecycle(scope, scheduleFlush = { QuestionFlushJob.schedule(ctx) }) {
        QuestionNotifier(ctx, App.core(ctx), AnswerReceiver::class.java, R.drawable.ic_question)   // opens SQLite: off the main thread
    }
    fun refresh(activity: Context): Job {
        val ctx = activity.applicationContext
        // FCM's current token: onNewToken fires only when it changes (perhaps before this install could keep it).
        FirebaseMessaging.getInstance().token.addOnSuccessListener { token ->
            scope.launch { runCatching { App.core(ctx).updatePushToken(token) } }   // kept signed out; registered if new
        }
        return scope.launch {
            // The core's foreground call (send, sync, reconcile), each step reported: signed out, offline, revoked.
            val r = lifecycle(ctx).onStart().await()
            r.statusLine?.let { Router.showStatus(it) }   // e.g. "pair this phone again", in the person's language
        }
    }
    fun stop(activity: Context): Job = lifecycle(activity.applicationContext).onStop()   // unsent answers: QuestionFlushJob
}
// end snippet

// snippet: android-open
class MainActivity : Activity() {
    override fun onCreate(savedInstanceState: Bundle?) {
        super.onCreate(savedInstanceState)
        if (Build.VERSION.SDK_INT >= 33 &&
            checkSelfPermission(Manifest.permission.POST_NOTIFICATIONS) != PackageManager.PERMISSION_GRANTED)
            requestPermissions(arrayOf(Manifest.permission.POST_NOTIFICATIONS), 1)   // Android 13+
        QuestionIntents.questionToOpen(intent)?.let { Router.open(it) }   // tapped: show that question
    }
    override fun onStart() {   // at launch and at every return to the foreground
        super.onStart()
        Foreground.refresh(this)
    }
    override fun onStop() {   // to the background
        super.onStop()
        Foreground.stop(this)
    }
    override fun onNewIntent(intent: android.content.Intent) {
        super.onNewIntent(intent)
        QuestionIntents.questionToOpen(intent)?.let { Router.open(it) }
    }
}
// end snippet

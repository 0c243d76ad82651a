// The README's Kotlin code, compiled with the suite (and the service and
// receiver driven by SnippetsTest). The regions between `// snippet: NAME`
// and `// end snippet` are the README's Kotlin blocks, verbatim
// (scripts/check-snippets compares them).
package io.questionprotocol.snippets

import android.app.Activity
import android.content.Context
import android.os.Build
import android.os.Bundle
import androidx.security.crypto.EncryptedSharedPreferences
import androidx.security.crypto.MasterKey
import com.google.firebase.messaging.FirebaseMessagingService
import com.google.firebase.messaging.RemoteMessage
import io.questionprotocol.android.QuestionAnswerReceiver
import io.questionprotocol.android.QuestionIntents
import io.questionprotocol.android.QuestionNotifier
import io.questionprotocol.android.deviceLanguages
import io.questionprotocol.core.DeviceRegistration
import io.questionprotocol.core.PairedAccount
import io.questionprotocol.core.Platform
import io.questionprotocol.core.SecureStore
import io.questionprotocol.core.TokenProvider
import io.questionprotocol.core.pairDevice

// snippet: android-keystore
class Keystore(ctx: Context) : SecureStore, TokenProvider {   // EncryptedSharedPreferences over the Android Keystore
    private val prefs = EncryptedSharedPreferences.create(ctx, "qp", MasterKey.Builder(ctx)
        .setKeyScheme(MasterKey.KeyScheme.AES256_GCM).build(),
        EncryptedSharedPreferences.PrefKeyEncryptionScheme.AES256_SIV,
        EncryptedSharedPreferences.PrefValueEncryptionScheme.AES256_GCM)
    override fun saveToken(userId: String, token: String) { prefs.edit().putString("token", token).commit() }
    override fun token(): String? = prefs.getString("token", null)
}
// end snippet

suspend fun pairExample(context: Context, scanned: String, fcmToken: String, keystore: Keystore): PairedAccount {
    val packageName = context.packageName
    // snippet: android-pair
    val account = pairDevice(scanned, null, Build.MODEL,
        DeviceRegistration(Platform.ANDROID, fcmToken, packageName, deviceLanguages().firstOrNull()), keystore)
    // end snippet
    return account
}

// snippet: android-service
class QpMessagingService : FirebaseMessagingService() {          // Firebase stays these few lines
    override fun onMessageReceived(m: RemoteMessage) {
        // A tap opens the app's launch activity at the question (QuestionIntents.questionToOpen).
        QuestionNotifier(this, App.core(this), AnswerReceiver::class.java, R.drawable.ic_question)
            .onDataMessage(m.data)
    }
    override fun onNewToken(token: String) = App.registerDevice(token)   // POST /api/devices
}
class AnswerReceiver : QuestionAnswerReceiver() {                 // <receiver android:exported="false"/>
    override fun core(context: Context) = App.core(context)
    override fun scheduleFlush(context: Context) = FlushWorker.enqueue(context)  // WorkManager: runBlocking { core.flush() }
    // The receiver commits the answer, then tries to send it at once within its
    // allowance (goAsync, 8 s) and updates the notification ("You answered: Approve");
    // scheduleFlush is called only for what could not be sent.
    override val smallIcon = R.drawable.ic_question
}
// end snippet

// snippet: android-open
class MainActivity : Activity() {
    override fun onCreate(savedInstanceState: Bundle?) {
        super.onCreate(savedInstanceState)
        QuestionIntents.questionToOpen(intent)?.let { Router.open(it) }   // tapped: show that question
    }
    override fun onNewIntent(intent: android.content.Intent) {
        super.onNewIntent(intent)
        QuestionIntents.questionToOpen(intent)?.let { Router.open(it) }
    }
}
// end snippet

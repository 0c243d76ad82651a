// COMPILE-TIME STAND-IN for the Firebase Cloud Messaging classes the
// README's code uses (Firebase lives on Google's Maven repository, which is
// not reachable here), with Firebase's names and signatures, so the README's
// service compiles as written. Test sources only: never shipped.
package com.google.firebase.messaging

import android.app.Service
import android.content.Intent
import android.os.IBinder
import com.google.android.gms.tasks.StandInTask
import com.google.android.gms.tasks.Task

class RemoteMessage(private val values: Map<String, String>) {
    /** `getData()`: the data payload. */
    val data: Map<String, String> get() = values
}

class FirebaseMessaging private constructor() {
    /** `getToken()`: the app instance's current FCM token. */
    val token: Task<String> get() = StandInTask(standInToken)

    companion object {
        private val instance = FirebaseMessaging()
        @JvmStatic fun getInstance(): FirebaseMessaging = instance
        /** Stand-in only: the token FCM has for this install (null: none yet). */
        @Volatile var standInToken: String? = null
    }
}

abstract class FirebaseMessagingService : Service() {
    open fun onMessageReceived(message: RemoteMessage) {}
    open fun onNewToken(token: String) {}
    override fun onBind(intent: Intent?): IBinder? = null
}

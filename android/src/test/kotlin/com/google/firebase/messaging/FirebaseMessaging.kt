// COMPILE-TIME STAND-IN for the two Firebase Cloud Messaging classes the
// README's code uses (Firebase lives on Google's Maven repository, which is
// not reachable here), with Firebase's names and signatures, so the README's
// service compiles as written. Test sources only: never shipped.
package com.google.firebase.messaging

import android.app.Service
import android.content.Intent
import android.os.IBinder

class RemoteMessage(private val values: Map<String, String>) {
    /** `getData()`: the data payload. */
    val data: Map<String, String> get() = values
}

abstract class FirebaseMessagingService : Service() {
    open fun onMessageReceived(message: RemoteMessage) {}
    open fun onNewToken(token: String) {}
    override fun onBind(intent: Intent?): IBinder? = null
}

// What the README's Kotlin takes from the app itself (not shown there): the
// device key's storage, the WorkManager job, the app's resources and
// navigation. Minimal versions so the snippets compile and the tests can
// drive them.
package io.questionprotocol.snippets

import android.content.Context
import io.questionprotocol.core.DeviceKeyStore

/** The device key in Keystore-backed storage (here: in memory, per process). */
class KeystoreDeviceKey(@Suppress("UNUSED_PARAMETER") ctx: Context) : DeviceKeyStore {
    companion object { @Volatile private var key: ByteArray? = null }
    override fun loadDeviceKey(): ByteArray? = key
    override fun saveDeviceKey(key: ByteArray): Boolean { KeystoreDeviceKey.key = key; return true }
}

object FlushWorker {
    var enqueued = 0
    fun enqueue(context: Context) { enqueued++ }
}

/** The app's generated R (its own resources). */
object R {
    object drawable {
        const val ic_question = android.R.drawable.ic_dialog_info
    }
}

object Router {
    val opened = mutableListOf<String>()
    fun open(questionId: String) { opened += questionId }
}

// What the README's Kotlin takes from the app itself (not shown there): the
// process's core, the device registration call, the WorkManager job, the
// app's resources and navigation. Minimal versions so the snippets compile
// and SnippetsTest can drive them.
package io.questionprotocol.snippets

import android.content.Context
import io.questionprotocol.core.PhoneCore

object App {
    /** Set by the test: the process's core. */
    var phone: PhoneCore? = null
    val tokens = mutableListOf<String>()
    fun core(context: Context): PhoneCore = checkNotNull(phone) { "no core for ${context.packageName}" }
    fun registerDevice(token: String) { tokens += token }
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

// Where the glue's entry points (the ones the system calls: the messaging
// service, the answer receiver, background work) put a failure they cannot
// throw: the core's log, which goes to logcat.
package io.questionprotocol.android

import io.questionprotocol.core.QpException
import io.questionprotocol.core.reportGlueFailure

/** Reports [error] at [site]; never throws (the library itself may be what
 *  failed to load). Only the error's type, and the core's own message for
 *  a [QpException]: an app's exception may carry anything, a token too. */
internal fun reportGlueFailureSafely(site: String, error: Throwable) {
    val text = if (error is QpException) error.toString() else error.javaClass.name
    try {
        reportGlueFailure(site, text)
    } catch (e: Throwable) {
        android.util.Log.w("QuestionProtocol", "$site: $text")
    }
}

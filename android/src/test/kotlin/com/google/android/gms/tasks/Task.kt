// COMPILE-TIME STAND-IN for Google Play services' Task (com.google.android.gms:
// play-services-tasks, on Google's Maven repository, not reachable here),
// the two members the README's code uses, with their names and signatures:
// what FirebaseMessaging.getInstance().token returns. Test sources only:
// never shipped. A stand-in task is complete when made (its listener runs
// at once, on the caller's thread).
package com.google.android.gms.tasks

fun interface OnSuccessListener<TResult> {
    fun onSuccess(result: TResult)
}

abstract class Task<TResult> {
    abstract fun addOnSuccessListener(listener: OnSuccessListener<in TResult>): Task<TResult>
}

/** Stand-in only: a task already completed with [result] (null: it failed, no listener runs). */
class StandInTask<TResult>(private val result: TResult?) : Task<TResult>() {
    override fun addOnSuccessListener(listener: OnSuccessListener<in TResult>): Task<TResult> {
        result?.let { listener.onSuccess(it) }
        return this
    }
}

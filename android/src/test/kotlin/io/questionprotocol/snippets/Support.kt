// What the README's Kotlin takes from the app itself (not shown there): the
// app's resources and navigation. Minimal versions so
// the snippets compile and the tests can drive them.
package io.questionprotocol.snippets


/** The app's generated R (its own resources). */
object R {
    object drawable {
        const val ic_question = android.R.drawable.ic_dialog_info
    }
}

object Router {
    val opened = mutableListOf<String>()
    fun open(questionId: String) { opened += questionId }
    val statusLines = java.util.Collections.synchronizedList(mutableListOf<String>())
    fun showStatus(line: String) { statusLines += line }
}

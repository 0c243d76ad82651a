// The generic notification when the native library cannot be loaded (an
// ABI missing from the install, a corrupted or stripped .so): its words are
// the core's, emitted at build time into GenericNotificationCopy
// (src/main/generated), since without the library the core cannot be asked.
// Every other path asks the core.
package io.questionprotocol.android

internal object GenericWithoutNative {
    /** The bundled language for the person's [languages] (most preferred
     *  first), else English. A plain match of the tag, then of its language
     *  (Chinese by its script: Traditional is not bundled); the core's own
     *  negotiation is richer, but cannot run without the library. */
    fun lines(languages: List<String>): GenericLines {
        val bundled = GenericNotificationCopy.LINES
        for (tag in languages) {
            val wanted = tag.replace('_', '-')
            bundled.entries.firstOrNull { it.key.equals(wanted, ignoreCase = true) }?.let { return it.value }
            val parts = wanted.split('-')
            val language = parts[0].lowercase()
            if (language == "zh") {
                val traditional = parts.any { it.equals("Hant", true) || it.uppercase() in setOf("TW", "HK", "MO") }
                if (traditional) continue
                bundled["zh-Hans"]?.let { return it }
                continue
            }
            bundled.entries.firstOrNull { it.key.substringBefore('-').equals(language, ignoreCase = true) }
                ?.let { return it.value }
        }
        return checkNotNull(bundled[GenericNotificationCopy.FALLBACK_LANGUAGE])
    }
}

// The generic notification when the native library cannot be loaded (an
// ABI missing from the install, a corrupted or stripped .so): its words are
// the core's, emitted at build time into GenericNotificationCopy
// (src/main/generated), since without the library the core cannot be asked.
// Every other path asks the core.
package io.questionprotocol.android

internal object GenericWithoutNative {
    /** The bundled language for the person's [languages] (most preferred
     *  first), else English: what the core's negotiation picks (GenericLanguageTest
     *  holds the two together over every locale the JVM knows), which cannot
     *  run without the library. Per tag: its extensions dropped (Android 14's
     *  `de-DE-u-fw-mon` is German); Chinese without a script gets its region's
     *  (the core's generated TRADITIONAL_CHINESE_REGIONS); a bundled language
     *  matches when its script, if it names one, is the tag's. Each bundled
     *  language is one tag, so the region never decides. */
    fun lines(languages: List<String>): GenericLines {
        val bundled = GenericNotificationCopy.LINES
        for (tag in languages) {
            val parts = tag.replace('_', '-').split('-')
            val extension = parts.drop(1).indexOfFirst { it.length == 1 }
            val subtags = if (extension < 0) parts else parts.take(extension + 1)
            val language = subtags[0].lowercase()
            val rest = subtags.drop(1)
            var script = rest.firstOrNull { it.length == 4 && it.all(Char::isLetter) }?.lowercase()
            val region = rest.firstOrNull { (it.length == 2 && it.all(Char::isLetter)) || (it.length == 3 && it.all(Char::isDigit)) }
            if (language == "zh" && script == null) {
                script = if (region?.uppercase() in GenericNotificationCopy.TRADITIONAL_CHINESE_REGIONS) "hant" else "hans"
            }
            bundled.entries.firstOrNull { (key, _) ->
                val b = key.split('-')
                val bundledScript = b.drop(1).firstOrNull { it.length == 4 }?.lowercase()
                b[0].equals(language, ignoreCase = true) && (bundledScript == null || bundledScript == script)
            }?.let { return it.value }
        }
        return checkNotNull(bundled[GenericNotificationCopy.FALLBACK_LANGUAGE])
    }
}

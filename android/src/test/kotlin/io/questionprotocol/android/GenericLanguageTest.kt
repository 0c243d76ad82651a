// The generic notification's language without the native library
// (GenericWithoutNative) is the core's negotiation, for every locale the
// JVM knows: the mirror exists only because the core cannot be asked then;
// here, with the library loaded, the core is the reference. Under
// Robolectric like every suite that loads the library: the library takes
// the callback interfaces of the first class loader that loads it, and a
// plain JUnit class first would leave the Robolectric suites' vaults and
// transports unreachable.
package io.questionprotocol.android

import io.questionprotocol.core.negotiatedLanguage
import org.junit.Assert.assertEquals
import org.junit.Assert.assertTrue
import org.junit.Test
import org.junit.runner.RunWith
import org.robolectric.RobolectricTestRunner
import java.util.Locale

@RunWith(RobolectricTestRunner::class)
class GenericLanguageTest {
    private fun withoutNative(languages: List<String>): String {
        val lines = GenericWithoutNative.lines(languages)
        return GenericNotificationCopy.LINES.entries.single { it.value === lines }.key
    }

    @Test
    fun everyLocaleGetsTheLanguageTheCoreNegotiates() {
        val tags = (Locale.getAvailableLocales().map { it.toLanguageTag() } +
            listOf("zh-CN", "zh-TW", "zh-HK", "zh-MO", "zh-SG", "zh-Hant", "zh-Hans-HK", "zh-Hant-CN", "zh", "pt", "pt-PT",
                "iw", "iw-IL", "he-IL", "en_GB", "de_AT", "sr-Latn-RS", "und", "x-private", "de-DE-u-fw-mon-mu-celsius"))
            .distinct().filter { it.isNotEmpty() }
        assertTrue("the JVM knows locales", tags.size > 100)
        val differ = mutableListOf<String>()
        for (tag in tags) {
            // The tag alone, then after a language nothing bundles.
            for (languages in listOf(listOf(tag), listOf("ko-KR", tag))) {
                val core = negotiatedLanguage(languages)
                val mirror = withoutNative(languages)
                if (core != mirror) differ += "$languages: core $core, without the library $mirror"
            }
        }
        assertEquals("languages where the mirror is not the core:\n" + differ.joinToString("\n"), 0, differ.size)
    }
}

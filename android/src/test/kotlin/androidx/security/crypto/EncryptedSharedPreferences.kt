// COMPILE-TIME STAND-IN for androidx.security:security-crypto (on Google's
// Maven repository, not reachable here), with its names and signatures, so
// the README's Keystore code compiles as written. Not encrypted: plain
// SharedPreferences. Test sources only: never shipped.
package androidx.security.crypto

import android.content.Context
import android.content.SharedPreferences

class MasterKey private constructor() {
    enum class KeyScheme { AES256_GCM }
    class Builder(private val context: Context) {
        fun setKeyScheme(scheme: KeyScheme): Builder = this
        fun build(): MasterKey = MasterKey()
    }
}

object EncryptedSharedPreferences {
    enum class PrefKeyEncryptionScheme { AES256_SIV }
    enum class PrefValueEncryptionScheme { AES256_GCM }

    @JvmStatic
    fun create(
        context: Context,
        fileName: String,
        masterKey: MasterKey,
        prefKeyEncryptionScheme: PrefKeyEncryptionScheme,
        prefValueEncryptionScheme: PrefValueEncryptionScheme,
    ): SharedPreferences {
        val prefs = context.getSharedPreferences(fileName, Context.MODE_PRIVATE)
        // What the real one throws when the file was written under a
        // Keystore key this install does not have (restored from a backup).
        if (prefs.contains(STAND_IN_FOREIGN_KEYSET)) {
            throw java.security.GeneralSecurityException("javax.crypto.AEADBadTagException (stand-in): $fileName")
        }
        return prefs
    }

    /** Stand-in only: a file holding this key was encrypted under another
     *  install's Keystore key (a restored backup): create() fails on it. */
    const val STAND_IN_FOREIGN_KEYSET = "__stand_in_foreign_keyset__"
}

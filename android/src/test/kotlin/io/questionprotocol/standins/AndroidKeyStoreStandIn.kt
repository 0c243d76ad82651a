// STAND-IN for the platform's "AndroidKeyStore" JCA provider, which
// Robolectric 4.14 does not provide (KeyStore.getInstance("AndroidKeyStore")
// fails with "AndroidKeyStore not found" there). Keys live in this JVM's
// memory, made by the JDK's AES (SunJCE): the docs' Keystore vault runs as
// written, with the JDK's AES-GCM. Not the hardware-backed store a phone
// has. Test sources only: never shipped.
package io.questionprotocol.standins

import android.security.keystore.KeyGenParameterSpec
import java.io.InputStream
import java.io.OutputStream
import java.security.Key
import java.security.KeyStoreSpi
import java.security.Provider
import java.security.SecureRandom
import java.security.Security
import java.security.cert.Certificate
import java.security.spec.AlgorithmParameterSpec
import java.util.Collections
import java.util.Date
import java.util.Enumeration
import javax.crypto.KeyGenerator
import javax.crypto.KeyGeneratorSpi
import javax.crypto.SecretKey

object AndroidKeyStoreStandIn {
    internal val keys: MutableMap<String, SecretKey> = Collections.synchronizedMap(mutableMapOf())

    /** Registers the provider (once per JVM); a phone's Keystore keeps its
     *  keys across processes, so they are kept until [wipe]. */
    @Synchronized
    fun install() {
        if (Security.getProvider("AndroidKeyStore") == null) Security.addProvider(StandInProvider())
    }

    /** Every key gone (a new phone: the data restored, the Keystore not). */
    fun wipe() = keys.clear()
}

class StandInProvider : Provider("AndroidKeyStore", "1.0", "stand-in for the Android Keystore (tests only)") {
    init {
        put("KeyStore.AndroidKeyStore", StandInKeyStoreSpi::class.java.name)
        put("KeyGenerator.AES", StandInAesKeyGeneratorSpi::class.java.name)
    }
}

class StandInKeyStoreSpi : KeyStoreSpi() {
    private val keys get() = AndroidKeyStoreStandIn.keys
    override fun engineGetKey(alias: String, password: CharArray?): Key? = keys[alias]
    override fun engineGetCertificateChain(alias: String?): Array<Certificate>? = null
    override fun engineGetCertificate(alias: String?): Certificate? = null
    override fun engineGetCreationDate(alias: String?): Date? = null
    override fun engineSetKeyEntry(alias: String, key: Key, password: CharArray?, chain: Array<out Certificate>?) {
        keys[alias] = key as SecretKey
    }
    override fun engineSetKeyEntry(alias: String?, key: ByteArray?, chain: Array<out Certificate>?) =
        throw UnsupportedOperationException()
    override fun engineSetCertificateEntry(alias: String?, cert: Certificate?) = throw UnsupportedOperationException()
    override fun engineDeleteEntry(alias: String) { keys.remove(alias) }
    override fun engineAliases(): Enumeration<String> = Collections.enumeration(keys.keys.toList())
    override fun engineContainsAlias(alias: String): Boolean = keys.containsKey(alias)
    override fun engineSize(): Int = keys.size
    override fun engineIsKeyEntry(alias: String): Boolean = keys.containsKey(alias)
    override fun engineIsCertificateEntry(alias: String?): Boolean = false
    override fun engineGetCertificateAlias(cert: Certificate?): String? = null
    override fun engineStore(stream: OutputStream?, password: CharArray?) {}
    override fun engineLoad(stream: InputStream?, password: CharArray?) {}
}

/** AES keys for a [KeyGenParameterSpec]: kept under its alias, as the
 *  Keystore keeps the keys it generates. */
class StandInAesKeyGeneratorSpi : KeyGeneratorSpi() {
    private var spec: KeyGenParameterSpec? = null
    override fun engineInit(random: SecureRandom?) = throw UnsupportedOperationException("needs a KeyGenParameterSpec")
    override fun engineInit(params: AlgorithmParameterSpec?, random: SecureRandom?) {
        spec = params as? KeyGenParameterSpec ?: throw java.security.InvalidAlgorithmParameterException("not a KeyGenParameterSpec")
    }
    override fun engineInit(keysize: Int, random: SecureRandom?) = throw UnsupportedOperationException("needs a KeyGenParameterSpec")
    override fun engineGenerateKey(): SecretKey {
        val s = checkNotNull(spec) { "not initialized" }
        val key = KeyGenerator.getInstance("AES", "SunJCE").apply { init(if (s.keySize > 0) s.keySize else 256) }.generateKey()
        AndroidKeyStoreStandIn.keys[s.keystoreAlias] = key
        return key
    }
}

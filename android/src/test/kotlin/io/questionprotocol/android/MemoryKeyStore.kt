package io.questionprotocol.android

import io.questionprotocol.core.DeviceKeyStore

/** The app's Keystore-backed storage for the device key, in memory. */
class MemoryKeyStore(private var key: ByteArray?) : DeviceKeyStore {
    override fun loadDeviceKey(): ByteArray? = key
    override fun saveDeviceKey(key: ByteArray): Boolean { this.key = key; return true }
}

package io.questionprotocol.android

import org.json.JSONArray
import org.json.JSONObject
import java.io.File

/** JSON text to plain Kotlin values (Map, List, Long/Double, String, Boolean, null). */
fun parse(text: String): Any? = norm(org.json.JSONTokener(text).nextValue())

fun norm(v: Any?): Any? = when (v) {
    null, JSONObject.NULL -> null
    is JSONObject -> v.keySet().associateWith { norm(v.get(it)) }
    is JSONArray -> (0 until v.length()).map { norm(v.get(it)) }
    is Map<*, *> -> v.entries.associate { it.key.toString() to norm(it.value) }
    is List<*> -> v.map { norm(it) }
    is Number -> if (v is Double || v is Float || v is java.math.BigDecimal) {
        val d = v.toDouble(); if (d % 1.0 == 0.0 && Math.abs(d) < 9e15) d.toLong() else d
    } else v.toLong()
    is UInt -> v.toLong()
    else -> v
}

/** JSON text of a plain value (for handing vectors to the core). */
fun toJson(v: Any?): String = when (v) {
    null -> "null"
    is Map<*, *> -> JSONObject(v.mapKeys { it.key.toString() }.mapValues { toJsonValue(it.value) }).toString()
    is List<*> -> JSONArray(v.map { toJsonValue(it) }).toString()
    is String -> JSONObject.quote(v)
    else -> v.toString()
}

private fun toJsonValue(v: Any?): Any = when (v) {
    null -> JSONObject.NULL
    is Map<*, *> -> JSONObject(v.mapKeys { it.key.toString() }.mapValues { toJsonValue(it.value) })
    is List<*> -> JSONArray(v.map { toJsonValue(it) })
    else -> v
}

@Suppress("UNCHECKED_CAST")
fun obj(v: Any?): Map<String, Any?> = v as Map<String, Any?>

/** (file: name, vector) for every vector of a folder. */
fun vectors(folder: String): List<Pair<String, Map<String, Any?>>> {
    val dir = File(System.getProperty("qp.vectors"), folder)
    return dir.listFiles { f -> f.name.endsWith(".json") }!!.sortedBy { it.name }.flatMap { f ->
        (obj(parse(f.readText()))["vectors"] as List<*>).map { v -> "${f.name}: ${obj(v)["name"]}" to obj(v) }
    }
}

/** Keys of `expected` that differ in `actual`, or null. */
fun subsetMismatch(actual: Map<String, Any?>, expected: Map<String, Any?>): String? {
    for ((k, want) in expected) {
        if (norm(actual[k]) != norm(want)) return "$k: expected $want, got ${actual[k]}"
    }
    return null
}

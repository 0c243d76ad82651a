package io.questionprotocol.android

import io.questionprotocol.core.FeedCell
import io.questionprotocol.core.FeedListener
import io.questionprotocol.core.PhoneCore
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.channels.awaitClose
import kotlinx.coroutines.flow.Flow
import kotlinx.coroutines.flow.callbackFlow
import kotlinx.coroutines.flow.conflate
import kotlinx.coroutines.flow.flowOn

/**
 * The feed as a [Flow]: the feed now, then again each time it may have
 * changed (the core's feed subscription fires after any commit to the shared
 * store, by the app or the messaging service's process). Glue only: the core
 * decides when and what. Read off the main thread; a slow collector gets the
 * newest feed, not a backlog; the core's subscription stops when collection
 * does. A store that cannot be read at the start ends the flow with its
 * error; a later failed read (a store suspended in the background) is
 * skipped: the core signals again on resume.
 *
 *     lifecycleScope.launch { phone.feedUpdates().collect { cells -> adapter.submit(cells) } }
 */
fun PhoneCore.feedUpdates(): Flow<List<FeedCell>> = callbackFlow {
    send(feed())
    val subscription = subscribeFeed(object : FeedListener {
        override fun feedChanged() {
            runCatching { feed() }.onSuccess { trySend(it) }
        }
    })
    awaitClose { subscription.cancel() }
}.conflate().flowOn(Dispatchers.IO)

// The standalone Gradle build of the Android library: what the release
// workflow (.github/workflows/android.yml) builds and publishes. The plugin
// versions are pinned here; an app that includes this folder as a module of
// its own build declares its own (Gradle reads only the root's settings).
pluginManagement {
    repositories {
        google()
        mavenCentral()
        gradlePluginPortal()
    }
    plugins {
        id("com.android.library") version "8.7.3"
        id("org.jetbrains.kotlin.android") version "2.2.21"
        // Maven Central (the Central Portal): signing, sources and javadoc
        // jars, POM metadata, upload and release.
        id("com.vanniktech.maven.publish") version "0.34.0"
    }
}

dependencyResolutionManagement {
    repositories {
        google()
        mavenCentral()
    }
}

rootProject.name = "qp-android"

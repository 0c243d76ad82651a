// The Android library module (an AAR) for a Gradle build: include this
// folder as a module of the app's build, e.g. in settings.gradle.kts
//   include(":questionprotocol")
//   project(":questionprotocol").projectDir = file("path/to/qp/android")
// and `implementation(project(":questionprotocol"))` in the app. The app's
// root build declares the plugin versions (AGP 8+, Kotlin 2.x).
//
// Before building: bindings/package-android (needs the Android NDK and
// cargo-ndk) puts the stripped libqp_ffi.so per ABI in src/main/jniLibs. The
// Kotlin bindings of that shipped library are committed in src/main/bindings
// (android/run-tests fails when they are not bindings/generate's output for
// the shipped feature set). Never build against ../build/bindings: the test
// scripts write the FEATURES=testing bindings there, whose extra exports
// the shipped .so lacks (JNA would fail to load it in a release build).
//
// Not built on the project's machines: Google's Maven repository (AGP,
// AndroidX) and the NDK are not reachable there. What is tested there is
// the same source set compiled by kotlinc and run under Robolectric
// (pom.xml, android/run-tests).
plugins {
    id("com.android.library")
    id("org.jetbrains.kotlin.android")
}

android {
    namespace = "io.questionprotocol.android"
    compileSdk = 35

    defaultConfig {
        minSdk = 26
        // Keeps JNA and the generated bindings through the app's R8.
        consumerProguardFiles("consumer-rules.pro")
    }

    sourceSets["main"].apply {
        kotlin.srcDirs("src/main/kotlin", "src/main/bindings")
        jniLibs.srcDirs("src/main/jniLibs")
    }

    compileOptions {
        sourceCompatibility = JavaVersion.VERSION_17
        targetCompatibility = JavaVersion.VERSION_17
    }
}

kotlin {
    jvmToolchain(17)
}

dependencies {
    // The AAR: JNA with its Android native dispatch libraries.
    implementation("net.java.dev.jna:jna:5.17.0@aar")
    implementation("org.jetbrains.kotlinx:kotlinx-coroutines-android:1.10.2")
}

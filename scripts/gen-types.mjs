#!/usr/bin/env node
// Placeholder until schemas/ exists: nothing to generate.
console.log("gen-types: no schemas yet");

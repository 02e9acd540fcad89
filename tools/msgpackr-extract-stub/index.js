// msgpackr loads this inside try/catch and falls back to JavaScript string extraction.
throw new Error("msgpackr-extract native acceleration is not installed (gitmesh stub)");

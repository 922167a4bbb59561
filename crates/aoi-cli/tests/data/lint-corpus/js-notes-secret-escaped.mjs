#!/usr/bin/env node
// js-notes-secret-escaped: js-notes with the fault "secret-escaped" switched on (the list is at the top of js-notes.mjs).
import { main } from "./js-notes.mjs";

await main("secret-escaped");

#!/usr/bin/env node
// js-notes-relay-prose: js-notes with the fault "relay-prose" switched on (the list is at the top of js-notes.mjs).
import { main } from "./js-notes.mjs";

await main("relay-prose");

// Drives headless Chromium (Debian's, /usr/bin/chromium) against a running `gorag review`, for
// tests/review_desk.rs: each command logs in as a browser would, acts with the keyboard only,
// and prints one JSON line of what the page showed and did.
//
//   node desk.mjs answer URL TOKEN KEY [--search TEXT] [--screenshot FILE]
//   node desk.mjs accept URL TOKEN LABEL NAME [--screenshot FILE]
//   node desk.mjs pair URL TOKEN_A TOKEN_B
import { chromium } from "playwright-core";

const [command, url, ...rest] = process.argv.slice(2);
const option = (name) => {
  const at = rest.indexOf(name);
  return at >= 0 ? rest[at + 1] : undefined;
};

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});

async function login(token) {
  const context = await browser.newContext({ viewport: { width: 1100, height: 760 } });
  const page = await context.newPage();
  await page.goto(url);
  await page.waitForSelector("#token", { state: "visible" });
  await page.fill("#token", token);
  await page.keyboard.press("Enter");
  await page.waitForSelector("#item:not([hidden]), #empty:not([hidden])");
  return page;
}

// The item on the page once one is shown: its id and kind.
async function shown(page) {
  await page.waitForSelector("#item:not([hidden])", { timeout: 60_000 });
  return page.evaluate(() => {
    const kind = document.querySelector("#item [data-kind]").dataset.kind;
    const text = document.querySelector("#text");
    const id = document.querySelector("#item .muted").textContent.split(" · ")[0];
    return { kind, id, text: text ? text.textContent : null };
  });
}

async function sent(page) {
  await page.waitForFunction(() => /^(sent|accepted|rejected)/.test(document.querySelector("#flash").textContent));
  return page.evaluate(() => document.querySelector("#flash").textContent);
}

let result;
try {
  if (command === "answer") {
    const [token, key] = rest;
    const page = await login(token);
    const item = await shown(page);
    const search = option("--search");
    let label;
    if (search) {
      await page.keyboard.press("/");
      await page.keyboard.type(search);
      label = await page.getAttribute("#matches li.first", "data-label");
      if (option("--screenshot")) await page.screenshot({ path: option("--screenshot") });
      await page.keyboard.press("Enter");
    } else {
      label = await page.getAttribute(`ol.candidates li:nth-child(${key})`, "data-label");
      if (option("--screenshot")) await page.screenshot({ path: option("--screenshot") });
      await page.keyboard.press(key);
    }
    result = { ...item, label, flash: await sent(page) };
  } else if (command === "accept") {
    const [token, label, name] = rest;
    const page = await login(token);
    const item = await shown(page);
    await page.fill("#proposal-label", label);
    await page.fill("#proposal-name", name);
    if (option("--screenshot")) await page.screenshot({ path: option("--screenshot") });
    await page.locator("#proposal-name").blur();
    await page.keyboard.press("a");
    result = { ...item, flash: await sent(page) };
  } else if (command === "pair") {
    const [a, b] = rest;
    const first = await shown(await login(a));
    const second = await shown(await login(b));
    result = { first: first.id, second: second.id };
  } else {
    throw new Error(`unknown command ${command}`);
  }
} finally {
  await browser.close();
}
console.log(JSON.stringify(result));

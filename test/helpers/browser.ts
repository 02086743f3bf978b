// Debian's Chromium through playwright-core, as the browser tests start it: headless, on a fresh
// temporary profile of its own, with nothing that calls home.
import { chromium, type Browser, type Page } from 'playwright-core';

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
}

/**
 * How wide the page is (the document's scroll width, in CSS pixels), and the elements that reach
 * past `viewport`: what makes a phone scroll sideways, named so a failure says what to fix.
 */
export async function pageWidth(page: Page, viewport: number): Promise<{ width: number; wider: string[] }> {
  return page.evaluate((limit) => {
    const doc = (globalThis as any).document;
    const wider: string[] = [];
    for (const el of doc.querySelectorAll('body *')) {
      const box = el.getBoundingClientRect();
      if (box.right > limit + 0.5 && box.width > 0)
        wider.push(
          `${el.tagName.toLowerCase()}${el.className ? `.${String(el.className).trim().replace(/\s+/g, '.')}` : ''} (${Math.round(box.right)})`,
        );
    }
    return { width: doc.scrollingElement.scrollWidth as number, wider: wider.slice(0, 8) };
  }, viewport);
}

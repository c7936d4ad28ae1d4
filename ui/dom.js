// DOM helpers: everything is escaped via textContent.
export const $ = (id) => document.getElementById(id);

/** Creates an element with properties/attributes and children (text or nodes). */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'class') node.className = value;
    else if (key === 'text') node.textContent = value;
    else if (key.startsWith('data-') || key.startsWith('aria-') || key === 'role' || key === 'tabindex' || key === 'scope') node.setAttribute(key, String(value));
    else node[key] = value;
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

/** Shows message in an alert element (or hides it when empty). */
export function showError(node, message) {
  node.textContent = message || '';
  node.hidden = !message;
}

export function errorMessage(error) {
  return (error && error.message) || String(error);
}

/** Formats an event time compactly (keeps full precision in a title). */
export function formatTime(time) {
  return String(time || '').replace('T', ' ').replace('Z', '');
}

// The demo's cast and phrase book: who writes, in which language, about what.
import type { Mailbox } from './mime.js';

export type Lang = 'en' | 'de' | 'fr' | 'ja';
export type AccountKey = 'work' | 'personal' | 'support';

export interface Person extends Mailbox {
  name: string;
  lang: Lang;
}

export interface DemoAccountSpec {
  key: AccountKey;
  name: string;
  emailAddress: string;
  provider: string;
  owner: Person;
  /** Share of the demo's messages. */
  share: number;
  /** Folder, weight, and what kind of mail lives there. */
  folders: ReadonlyArray<readonly [folder: string, weight: number, kind: FolderKind]>;
}

export type FolderKind =
  'colleagues' | 'project' | 'receipts' | 'sent' | 'friends' | 'newsletters' | 'travel' | 'tickets' | 'escalations';

export const ALICE: Person = { name: 'Alice Weber', address: 'alice.weber@northwind.example', lang: 'en' };
const ALICE_HOME: Person = { name: 'Alice Weber', address: 'alice.weber@mailbox.example', lang: 'en' };
export const SUPPORT: Person = { name: 'Northwind Support', address: 'support@northwind.example', lang: 'en' };

export const DEMO_ACCOUNTS: readonly DemoAccountSpec[] = [
  {
    key: 'work',
    name: 'Alice Weber (Work)',
    emailAddress: ALICE.address,
    provider: 'IMAP',
    owner: ALICE,
    share: 0.5,
    folders: [
      ['INBOX', 40, 'colleagues'],
      ['INBOX/Projects/Apollo', 10, 'project'],
      ['INBOX/Projects/Zephyr', 7, 'project'],
      ['INBOX/Receipts', 6, 'receipts'],
      ['Sent', 20, 'sent'],
      ['Archive/2023', 10, 'colleagues'],
      ['Archive/2022', 7, 'colleagues'],
    ],
  },
  {
    key: 'personal',
    name: 'Alice Weber (Personal)',
    emailAddress: ALICE_HOME.address,
    provider: 'M365',
    owner: ALICE_HOME,
    share: 0.3,
    folders: [
      ['INBOX', 40, 'friends'],
      ['Newsletters', 20, 'newsletters'],
      ['Travel', 12, 'travel'],
      ['Sent', 18, 'sent'],
      ['Archive/2023', 10, 'friends'],
    ],
  },
  {
    key: 'support',
    name: 'Support Desk',
    emailAddress: SUPPORT.address,
    provider: 'M365',
    owner: SUPPORT,
    share: 0.2,
    folders: [
      ['INBOX', 50, 'tickets'],
      ['INBOX/Escalations', 10, 'escalations'],
      ['Sent', 30, 'sent'],
      ['Archive/2023', 10, 'tickets'],
    ],
  },
];

export interface DemoUserSpec {
  username: string;
  email: string;
  isAdmin: boolean;
  accounts: readonly AccountKey[];
}

/** admin sees everything; alice and bob see only their own accounts. */
export const DEMO_USERS: readonly DemoUserSpec[] = [
  { username: 'admin', email: 'it@northwind.example', isAdmin: true, accounts: [] },
  { username: 'alice', email: ALICE.address, isAdmin: false, accounts: ['work', 'personal'] },
  { username: 'bob', email: 'bob.tanaka@northwind.example', isAdmin: false, accounts: ['support'] },
];

export const COLLEAGUES: readonly Person[] = [
  { name: 'Dan Okafor', address: 'dan.okafor@northwind.example', lang: 'en' },
  { name: 'Priya Raman', address: 'priya.raman@northwind.example', lang: 'en' },
  { name: 'Katrin Schäfer', address: 'katrin.schaefer@northwind.example', lang: 'de' },
  { name: 'Mark Jensen', address: 'mark.jensen@northwind.example', lang: 'en' },
  { name: 'Jürgen Müller', address: 'juergen.mueller@beispiel.example', lang: 'de' },
  { name: 'Françoise Dupont', address: 'francoise.dupont@exemple.example', lang: 'fr' },
  { name: '山田 太郎', address: 'taro.yamada@rei.example', lang: 'ja' },
];

export const FRIENDS: readonly Person[] = [
  { name: "Zoë O'Brien", address: 'zoe.obrien@example.org', lang: 'en' },
  { name: 'Léa Martin', address: 'lea.martin@exemple.example', lang: 'fr' },
  { name: 'Carlos Núñez', address: 'carlos.nunez@example.net', lang: 'en' },
  { name: '佐藤 花子', address: 'hanako.sato@rei.example', lang: 'ja' },
  { name: 'Maria Weber', address: 'maria.weber@mailbox.example', lang: 'de' },
];

export const CUSTOMERS: readonly Person[] = [
  { name: 'Olivia Brown', address: 'olivia@brown-consulting.example', lang: 'en' },
  { name: 'Henrik Løvstad', address: 'henrik@fjord.example', lang: 'en' },
  { name: 'Sophie Lefèvre', address: 'sophie.lefevre@boulangerie.example', lang: 'fr' },
  { name: 'Günther Becker', address: 'g.becker@werkstatt.example', lang: 'de' },
  { name: '鈴木 一郎', address: 'ichiro.suzuki@shouten.example', lang: 'ja' },
  { name: 'Ahmed Hassan', address: 'ahmed@nile-traders.example', lang: 'en' },
];

export const NEWSLETTERS: readonly Person[] = [
  { name: 'Northwind Weekly', address: 'news@northwind-weekly.example', lang: 'en' },
  { name: 'Le Petit Journal Tech', address: 'lettre@journal-tech.example', lang: 'fr' },
  { name: 'Tech Digest 📰', address: 'digest@techdigest.example', lang: 'en' },
];

export const VENDORS: readonly Person[] = [
  { name: 'Contoso Billing', address: 'billing@contoso.example', lang: 'en' },
  { name: 'Büro Schmidt GmbH', address: 'rechnung@buero-schmidt.example', lang: 'de' },
];

export interface Phrases {
  greeting: readonly string[];
  closing: readonly string[];
  sentences: readonly string[];
  subjects: Readonly<Partial<Record<FolderKind, readonly string[]>>>;
}

export const PHRASES: Readonly<Record<Lang, Phrases>> = {
  en: {
    greeting: ['Hi {first},', 'Hello {first},', 'Dear {first},'],
    closing: ['Best regards,', 'Thanks,', 'Cheers,'],
    sentences: [
      'Please find the latest figures attached.',
      'Could we move the meeting to Thursday afternoon?',
      'The deployment went smoothly and monitoring looks clean.',
      'I have added my comments to the shared draft.',
      'Let me know if anything is unclear.',
      'The customer confirmed the delivery date for next week.',
      'We are still waiting for the signed contract.',
      'The budget for the next quarter is almost final.',
      'Thanks for the quick turnaround on this.',
      'I will be out of office on Monday.',
    ],
    subjects: {
      colleagues: [
        'Quarterly budget review',
        'Draft agenda for the offsite',
        'Customer feedback summary',
        'Lunch on Friday?',
        'Updated org chart',
        'Security training reminder',
      ],
      project: [
        'Status update: {project}',
        '{project}: risks and next steps',
        '{project} sprint review notes',
        'Deployment checklist for {project} v{n}',
      ],
      friends: [
        'Weekend plans ☀️',
        '🎉 Party on Saturday!',
        'Photos from the trip 📸',
        '☕ Coffee next week?',
        'Happy birthday! 🎂',
      ],
      tickets: [
        'Ticket #{n}: cannot sign in',
        'Ticket #{n}: export fails with error 500',
        'Ticket #{n}: invoice missing',
        'Ticket #{n}: how do I add a user?',
      ],
      escalations: ['URGENT: Ticket #{n} data export stuck', 'Escalation: Ticket #{n} outage report'],
      travel: [
        'Booking confirmation: Berlin → Paris',
        'Your e-ticket for flight NW{n}',
        'Hotel reservation {n} confirmed',
      ],
      receipts: ['Invoice {n} from Contoso Ltd.', 'Your receipt #{n}'],
      newsletters: ['Your weekly digest: {topic}', 'This week in {topic}'],
    },
  },
  de: {
    greeting: ['Hallo {first},', 'Liebe {first},', 'Guten Tag {first},'],
    closing: ['Viele Grüße', 'Beste Grüße', 'Mit freundlichen Grüßen'],
    sentences: [
      'Anbei findest du den überarbeiteten Entwurf.',
      'Können wir das Treffen auf Donnerstag verschieben?',
      'Die Zahlen für das dritte Quartal sehen gut aus.',
      'Bitte prüfe die Änderungen bis Freitag.',
      'Für Rückfragen stehe ich gerne zur Verfügung.',
      'Die Lieferung verzögert sich leider um zwei Tage.',
    ],
    subjects: {
      colleagues: [
        'Angebot für die Überarbeitung der Website',
        'Besprechung am Donnerstag – Tagesordnung',
        'Grüße aus München',
        'Änderungen am Vertragsentwurf',
      ],
      project: ['Statusbericht {project}', '{project}: offene Punkte'],
      friends: ['Grüße aus dem Urlaub', 'Kaffee am Sonntag?'],
      tickets: ['Ticket #{n}: Anmeldung nicht möglich', 'Ticket #{n}: Rechnung fehlt'],
      receipts: ['Rechnung Nr. {n}'],
    },
  },
  fr: {
    greeting: ['Bonjour {first},', 'Chère équipe,', 'Salut {first} !'],
    closing: ['Cordialement,', 'Bien à vous,', 'À bientôt,'],
    sentences: [
      'Veuillez trouver ci-joint le compte rendu de la réunion.',
      'Pouvons-nous décaler la réunion à jeudi ?',
      'Le budget prévisionnel a été validé par la direction.',
      'Merci de me confirmer votre présence.',
      'Je reste à votre disposition pour toute question.',
      'La livraison est prévue pour la semaine prochaine.',
    ],
    subjects: {
      colleagues: [
        "Réunion de l'équipe : ordre du jour",
        'Compte rendu du comité de pilotage',
        'Prévisions budgétaires',
      ],
      project: ['Point d’avancement {project}', '{project} : prochaines étapes'],
      friends: ['On se voit ce week-end ?', 'Photos de vacances 🌊'],
      tickets: ['Demande #{n} : facture introuvable', 'Demande #{n} : accès refusé'],
      travel: ['Votre réservation à Genève est confirmée', 'Confirmation de votre billet de train'],
      newsletters: ['La lettre du mois : {topic}'],
    },
  },
  ja: {
    greeting: ['{first}様', 'お疲れさまです。'],
    closing: ['よろしくお願いいたします。', '引き続きよろしくお願いします。'],
    sentences: [
      'いつもお世話になっております。',
      '添付の資料をご確認ください。',
      '来週の打ち合わせの日程を調整させてください。',
      'ご不明な点がございましたらお知らせください。',
      '見積書を送付いたします。',
    ],
    subjects: {
      colleagues: ['会議の議事録について', '見積書の送付について', '来週の打ち合わせ'],
      project: ['{project} 進捗報告'],
      friends: ['週末の予定 🌸', '旅行の写真'],
      tickets: ['チケット #{n}: パスワードの再設定', 'チケット #{n}: ログインできません'],
    },
  },
};

export const PROJECTS: Readonly<Record<string, string>> = {
  'INBOX/Projects/Apollo': 'Apollo',
  'INBOX/Projects/Zephyr': 'Zephyr',
};
export const TOPICS = [
  'cloud security',
  'remote work',
  'open source',
  'databases',
  'AI assistants',
  'e-mail archiving',
];

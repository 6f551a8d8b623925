; Strata Companion: the Windows installer (NSIS 3.08+, Modern UI 2).
;
; Built on Linux by installer/build.sh, which passes:
;   VERSION   the product version ("0.1.0"), VERSION4 its four-part form ("0.1.0.1")
;   BINDIR    the folder holding the four Windows programs
;   ASSETS    the assets folder (app.ico)
;   LICENSE   the licence text shown on the licence page
;   OUTFILE   the installer to write
;   SIGN_CMD  (optional) a command that signs the file given as its last argument
;             in place; the uninstaller and the installer are signed with it
;
; Command line (besides NSIS's own /S and /D=<install folder>, which must come last):
;   /STRATA=<folder>    the Strata install (the folder holding serve\server.py)
;   /TRAYLOGIN=1|0      start the tray at login for everyone (default: off, or
;                       as before on an upgrade)
;   /ROLE=lend          lend this PC's GPU to another PC: only strata-service and
;                       strata-vision-relay, "strata-service lend" run, no Strata
;                       service (default: the role installed before, else Strata)
; Uninstaller:
;   /KEEPSETTINGS=0     remove the companion's settings and keys (default 1: keep)
;   /RESTOREVISION=1    put back the Strata config's vision block from before the
;                       companion changed it (default 0)
;
; Exit codes of a silent install: 0 done; 2 /STRATA is not a Strata folder;
; 3 installed, but the service could not be registered or started (see the
; message and run "strata-service install" again from an administrator prompt);
; 4 (lend role) installed, but lending could not be set up.

Unicode true
ManifestSupportedOS all
ManifestDPIAware true

!macro Need NAME
  !ifndef ${NAME}
    !error "${NAME} is not defined: build the installer with installer/build.sh"
  !endif
!macroend
!insertmacro Need VERSION
!insertmacro Need VERSION4
!insertmacro Need BINDIR
!insertmacro Need ASSETS
!insertmacro Need LICENSE
!insertmacro Need OUTFILE

!define PRODUCT "Strata Companion"
!define PUBLISHER "Strata Companion project"
!define URL "https://github.com/Niko1221/Strata"
!define REGKEY "Software\StrataCompanion"
!define UNINSTKEY "Software\Microsoft\Windows\CurrentVersion\Uninstall\StrataCompanion"
!define RUNKEY "Software\Microsoft\Windows\CurrentVersion\Run"
!define RUNVALUE "StrataCompanionTray"
; %ProgramData%\StrataCompanion, as internal/locations says ($APPDATA with
; SetShellVarContext all).
!define DATADIR "$APPDATA\StrataCompanion"

!include MUI2.nsh
!include nsDialogs.nsh
!include LogicLib.nsh
!include FileFunc.nsh
!include WinVer.nsh
!include x64.nsh
!include Sections.nsh

Name "${PRODUCT}"
OutFile "${OUTFILE}"
InstallDir "$PROGRAMFILES64\${PRODUCT}"
InstallDirRegKey HKLM "${UNINSTKEY}" "InstallLocation"
RequestExecutionLevel admin
!ifdef FAST_COMPRESSION
  ; test repacks only (build.sh with STRATA_NSIS_FAST=1): zlib packs in seconds
  SetCompressor zlib
!else
  SetCompressor /SOLID lzma
!endif
BrandingText "${PRODUCT} ${VERSION}"
ShowInstDetails show
ShowUninstDetails show

VIProductVersion "${VERSION4}"
VIFileVersion "${VERSION4}"
VIAddVersionKey /LANG=1033 "ProductName" "${PRODUCT}"
VIAddVersionKey /LANG=1033 "ProductVersion" "${VERSION}"
VIAddVersionKey /LANG=1033 "FileVersion" "${VERSION}"
VIAddVersionKey /LANG=1033 "FileDescription" "${PRODUCT} Setup"
VIAddVersionKey /LANG=1033 "CompanyName" "${PUBLISHER}"
VIAddVersionKey /LANG=1033 "LegalCopyright" "Copyright (c) the Strata Companion authors"

!ifdef SIGN_CMD
  ; Sign the uninstaller before it is packed into the installer, and the
  ; installer once written; a failed signature fails the build.
  !uninstfinalize `${SIGN_CMD} "%1"` = 0
  !finalize `${SIGN_CMD} "%1"` = 0
!endif

Var StrataRoot     ; the Strata folder ("" = not known: the setup wizard asks)
Var TrayLogin      ; 1: start the tray at login
Var Upgrade        ; 1: an older Strata Companion is installed here
Var Dialog
Var StrataField
Var StrataStatus
Var TrayBox
Var KeepSettings   ; uninstaller: 1 keep settings and keys
Var RestoreVision  ; uninstaller: 1 run "strata-service vision restore"
Var KeepBox
Var RestoreBox
Var Role           ; "strata": run Strata here (the default); "lend": lend this PC's GPU
Var PrevRole       ; the role installed before ("" when none, or a version before roles)
Var StrataRadio
Var LendRadio
Var LendCode       ; lend role: the pairing code shown on the Finish page ("" when lending failed)
Var LendName       ; lend role: this PC's name on the network
Var LendUntil      ; lend role: the code works until this time of day
Var FinishText
Var CodeFont

; ---- pages ----

!define MUI_ICON "${ASSETS}/app.ico"
!define MUI_UNICON "${ASSETS}/app.ico"
!define MUI_ABORTWARNING
!ifdef WELCOME_BMP
  !define MUI_WELCOMEFINISHPAGE_BITMAP "${WELCOME_BMP}"
!endif
!define MUI_WELCOMEPAGE_TEXT "This installs ${PRODUCT} ${VERSION}: it runs your Strata server as a Windows service, shows its state in the notification area, and lets you choose where Strata reads pictures.$\r$\n$\r$\nStrata itself must already be installed; ${PRODUCT} never changes the Strata install or its models.$\r$\n$\r$\nClick Next to continue."
!insertmacro MUI_PAGE_WELCOME
!insertmacro MUI_PAGE_LICENSE "${LICENSE}"
Page custom RolePageCreate RolePageLeave
!insertmacro MUI_PAGE_DIRECTORY
Page custom StrataPageCreate StrataPageLeave
!insertmacro MUI_PAGE_INSTFILES
!define MUI_FINISHPAGE_TEXT "$FinishText"
!define MUI_FINISHPAGE_TEXT_LARGE
!define MUI_FINISHPAGE_RUN
!define MUI_FINISHPAGE_RUN_TEXT "Open ${PRODUCT} setup now"
!define MUI_FINISHPAGE_RUN_FUNCTION LaunchWizard
!define MUI_PAGE_CUSTOMFUNCTION_SHOW FinishPageShow
!insertmacro MUI_PAGE_FINISH

!insertmacro MUI_UNPAGE_CONFIRM
UninstPage custom un.OptionsPageCreate un.OptionsPageLeave
!insertmacro MUI_UNPAGE_INSTFILES

!insertmacro MUI_LANGUAGE "English"

; ---- helpers shared by the installer and the uninstaller ----

; EndPrograms ends the tray, the wizard and a running relay (they hold files
; open), politely first, then by force.
!macro EndProgramsBody
  DetailPrint "Closing Strata Companion programs that are running"
  nsExec::Exec 'taskkill /IM strata-tray.exe /IM strata-setup.exe'
  Pop $0
  Sleep 1500
  nsExec::Exec 'taskkill /F /IM strata-tray.exe /IM strata-setup.exe /IM strata-vision-relay.exe'
  Pop $0
!macroend
Function EndPrograms
  !insertmacro EndProgramsBody
FunctionEnd
Function un.EndPrograms
  !insertmacro EndProgramsBody
FunctionEnd

; ServiceCmd runs strata-service.exe with the given arguments, logs its
; output, and leaves its exit code in $0.
!macro ServiceCmdBody
  Exch $1
  DetailPrint "strata-service $1"
  nsExec::ExecToLog '"$INSTDIR\strata-service.exe" $1'
  Pop $0
  DetailPrint "strata-service $1: exit code $0"
  Pop $1
!macroend
Function ServiceCmd
  !insertmacro ServiceCmdBody
FunctionEnd
Function un.ServiceCmd
  !insertmacro ServiceCmdBody
FunctionEnd
!macro ServiceCmd ARGS
  Push `${ARGS}`
  Call ServiceCmd
!macroend
!macro un.ServiceCmd ARGS
  Push `${ARGS}`
  Call un.ServiceCmd
!macroend

; ---- the Strata folder ----

; IsStrata: $0 = 1 when the folder in $1 holds serve\server.py.
Function IsStrata
  StrCpy $0 0
  ${If} $1 != ""
  ${AndIf} ${FileExists} "$1\serve\server.py"
    StrCpy $0 1
  ${EndIf}
FunctionEnd

; TryStrata: if $StrataRoot is still empty and $1 is a Strata folder, take it.
Function TryStrata
  ${If} $StrataRoot == ""
    Call IsStrata
    ${If} $0 == 1
      StrCpy $StrataRoot $1
    ${EndIf}
  ${EndIf}
FunctionEnd

; TryUnder looks for the usual Strata folder names under the folder in $2.
Function TryUnder
  ${If} $StrataRoot == ""
    StrCpy $1 "$2\Strata"
    Call TryStrata
    StrCpy $1 "$2\Strata-main"
    Call TryStrata
    StrCpy $1 "$2\AI\Strata"
    Call TryStrata
  ${EndIf}
FunctionEnd

; FindStrata fills $StrataRoot from the last install, else from the usual places:
; drive roots, every user's profile, Desktop, Documents, Downloads, source\repos.
Function FindStrata
  ReadRegStr $1 HKLM "${REGKEY}" "StrataRoot"
  Call TryStrata
  StrCpy $2 "$PROGRAMFILES64"
  Call TryUnder
  ${GetParent} "$PROFILE" $5
  ${If} $5 != ""
    FindFirst $3 $4 "$5\*"
    ${DoWhile} $4 != ""
      ${If} $4 != "."
      ${AndIf} $4 != ".."
        ${ForEach} $6 0 4 + 1
          ${Select} $6
            ${Case} 0
              StrCpy $2 "$5\$4"
            ${Case} 1
              StrCpy $2 "$5\$4\Desktop"
            ${Case} 2
              StrCpy $2 "$5\$4\Documents"
            ${Case} 3
              StrCpy $2 "$5\$4\Downloads"
            ${Case} 4
              StrCpy $2 "$5\$4\source\repos"
          ${EndSelect}
          Call TryUnder
        ${Next}
      ${EndIf}
      FindNext $3 $4
    ${Loop}
    FindClose $3
  ${EndIf}
  ${ForEach} $6 0 3 + 1
    ${Select} $6
      ${Case} 0
        StrCpy $2 "C:"
      ${Case} 1
        StrCpy $2 "D:"
      ${Case} 2
        StrCpy $2 "E:"
      ${Case} 3
        StrCpy $2 "F:"
    ${EndSelect}
    Call TryUnder
  ${Next}
FunctionEnd

; ---- the role: run Strata here, or lend this PC's GPU ----

Function RolePageCreate
  !insertmacro MUI_HEADER_TEXT "What this PC does" "Run Strata here, or lend this PC's GPU to the PC that runs it?"
  nsDialogs::Create 1018
  Pop $Dialog
  ${If} $Dialog == error
    Abort
  ${EndIf}
  ${NSD_CreateFirstRadioButton} 0 0 100% 12u "&Run Strata on this PC"
  Pop $StrataRadio
  ${NSD_CreateLabel} 12u 13u 95% 20u "Installs the ${PRODUCT} service, its tray icon and its setup: they run your Strata server and choose where it reads pictures."
  Pop $0
  ${NSD_CreateAdditionalRadioButton} 0 44u 100% 12u "&Lend this PC's GPU to another PC"
  Pop $LendRadio
  ${NSD_CreateLabel} 12u 57u 95% 36u "For a PC without Strata, such as a gaming laptop: installs only what reads pictures for the PC that runs Strata, and shows a pairing code to type there. Strata is not installed or run here."
  Pop $0
  ${If} $Role == "lend"
    ${NSD_Check} $LendRadio
  ${Else}
    ${NSD_Check} $StrataRadio
  ${EndIf}
  nsDialogs::Show
FunctionEnd

Function RolePageLeave
  ${NSD_GetState} $LendRadio $0
  ${If} $0 == ${BST_CHECKED}
    StrCpy $Role "lend"
  ${Else}
    StrCpy $Role "strata"
  ${EndIf}
  Call ApplyRole
FunctionEnd

Function StrataPageCreate
  ${If} $Role == "lend"
    Abort ; a lending PC has no Strata
  ${EndIf}
  !insertmacro MUI_HEADER_TEXT "Strata folder" "Where is Strata installed on this PC?"
  nsDialogs::Create 1018
  Pop $Dialog
  ${If} $Dialog == error
    Abort
  ${EndIf}
  ${NSD_CreateLabel} 0 0 100% 30u "${PRODUCT} runs the Strata server from its folder: the one holding serve\server.py and engine\. Leave it empty to choose it later in the setup."
  Pop $0
  ${NSD_CreateDirRequest} 0 34u 235u 13u "$StrataRoot"
  Pop $StrataField
  ${NSD_CreateBrowseButton} 240u 33u 60u 15u "Browse..."
  Pop $0
  ${NSD_OnClick} $0 StrataBrowse
  ${NSD_OnChange} $StrataField StrataChanged
  ${NSD_CreateLabel} 0 52u 100% 20u ""
  Pop $StrataStatus
  ${NSD_CreateCheckbox} 0 84u 100% 12u "&Start the ${PRODUCT} tray icon when anyone signs in to Windows"
  Pop $TrayBox
  ${If} $TrayLogin == 1
    ${NSD_Check} $TrayBox
  ${EndIf}
  Call StrataChanged
  nsDialogs::Show
FunctionEnd

Function StrataBrowse
  ${NSD_GetText} $StrataField $1
  nsDialogs::SelectFolderDialog "Choose the Strata folder (the one holding serve\server.py)" "$1"
  Pop $1
  ${If} $1 != error
    ${NSD_SetText} $StrataField $1
    Call StrataChanged
  ${EndIf}
FunctionEnd

Function StrataChanged
  ${NSD_GetText} $StrataField $1
  Call IsStrata
  ${If} $1 == ""
    ${NSD_SetText} $StrataStatus "No folder: the setup will ask for it."
  ${ElseIf} $0 == 1
    ${NSD_SetText} $StrataStatus "Found Strata here (serve\server.py)."
  ${Else}
    ${NSD_SetText} $StrataStatus "This folder has no serve\server.py: it does not look like a Strata install."
  ${EndIf}
FunctionEnd

Function StrataPageLeave
  ${NSD_GetText} $StrataField $1
  Call IsStrata
  ${If} $1 != ""
  ${AndIf} $0 != 1
    MessageBox MB_ICONEXCLAMATION|MB_OK "$1 does not look like a Strata install: it has no serve\server.py.$\r$\n$\r$\nChoose the folder that holds serve\ and engine\, or leave the field empty to choose it later in the setup."
    Abort
  ${EndIf}
  StrCpy $StrataRoot $1
  ${NSD_GetState} $TrayBox $0
  ${If} $0 == ${BST_CHECKED}
    StrCpy $TrayLogin 1
  ${Else}
    StrCpy $TrayLogin 0
  ${EndIf}
FunctionEnd

; ---- install ----

Function .onInit
  SetShellVarContext all
  ${IfNot} ${RunningX64}
  ${OrIfNot} ${AtLeastWin10}
    MessageBox MB_ICONSTOP|MB_OK "${PRODUCT} needs 64-bit Windows 10 or later." /SD IDOK
    SetErrorLevel 1
    Quit
  ${EndIf}

  StrCpy $FinishText "$(MUI_TEXT_FINISH_INFO_TEXT)"
  StrCpy $Upgrade 0
  ReadRegStr $0 HKLM "${UNINSTKEY}" "DisplayVersion"
  ${If} $0 != ""
    StrCpy $Upgrade 1
  ${EndIf}

  ; The login entry stays as it was on an upgrade unless the page or
  ; /TRAYLOGIN says otherwise.
  StrCpy $TrayLogin 0
  ReadRegStr $0 HKLM "${RUNKEY}" "${RUNVALUE}"
  ${If} $0 != ""
    StrCpy $TrayLogin 1
  ${EndIf}

  ${GetParameters} $R0
  ClearErrors
  ${GetOptions} $R0 "/TRAYLOGIN=" $R1
  ${IfNot} ${Errors}
    ${If} $R1 == 1
      StrCpy $TrayLogin 1
    ${Else}
      StrCpy $TrayLogin 0
    ${EndIf}
  ${EndIf}

  ; The role: as installed before, unless /ROLE says otherwise.
  ReadRegStr $PrevRole HKLM "${REGKEY}" "Role"
  ${If} $PrevRole == ""
  ${AndIf} $Upgrade == 1
    StrCpy $PrevRole "strata" ; versions before roles ran Strata
  ${EndIf}
  StrCpy $Role $PrevRole
  ${If} $Role != "lend"
    StrCpy $Role "strata"
  ${EndIf}
  ClearErrors
  ${GetOptions} $R0 "/ROLE=" $R1
  ${IfNot} ${Errors}
    ${If} $R1 == "lend"
      StrCpy $Role "lend"
    ${Else}
      StrCpy $Role "strata"
    ${EndIf}
  ${EndIf}
  Call ApplyRole

  StrCpy $StrataRoot ""
  ClearErrors
  ${GetOptions} $R0 "/STRATA=" $R1
  ${IfNot} ${Errors}
    StrCpy $1 $R1
    Call IsStrata
    ${If} $0 != 1
      MessageBox MB_ICONSTOP|MB_OK "/STRATA=$R1 is not a Strata install: it has no serve\server.py." /SD IDOK
      SetErrorLevel 2
      Quit
    ${EndIf}
    StrCpy $StrataRoot $R1
  ${Else}
    Call FindStrata
  ${EndIf}
FunctionEnd

Section "-${PRODUCT}" SecMain
  SetShellVarContext all
  SetOutPath "$INSTDIR"

  ; Upgrade in place: stop what the version installed before runs (StopOld),
  ; then replace the files. Settings in ${DATADIR} are not touched.
  Call StopOld
  ; A PC that lent its GPU before: its own Start menu entry goes.
  Delete "$SMPROGRAMS\${PRODUCT}\New pairing code.lnk"

  File "${BINDIR}/strata-service.exe"
  File "${BINDIR}/strata-vision-relay.exe"
  File "${BINDIR}/strata-tray.exe"
  File "${BINDIR}/strata-setup.exe"
  File "/oname=LICENSE.txt" "${LICENSE}"
  ; The relay's agent for a Linux second PC: `strata-service remote prepare`
  ; looks for it in <install folder>\<os>-<arch>\ and uploads it there.
  SetOutPath "$INSTDIR\linux-amd64"
  File "${BINDIR}/linux-amd64/strata-vision-relay"
  SetOutPath "$INSTDIR\linux-arm64"
  File "${BINDIR}/linux-arm64/strata-vision-relay"
  SetOutPath "$INSTDIR"
  WriteUninstaller "$INSTDIR\uninstall.exe"

  Call DataFolders

  CreateDirectory "$SMPROGRAMS\${PRODUCT}"
  CreateShortcut "$SMPROGRAMS\${PRODUCT}\${PRODUCT} Setup.lnk" "$INSTDIR\strata-setup.exe" "" "$INSTDIR\strata-setup.exe" 0 SW_SHOWNORMAL "" "Choose where Strata reads pictures and set up the Strata server"
  CreateShortcut "$SMPROGRAMS\${PRODUCT}\${PRODUCT} Tray.lnk" "$INSTDIR\strata-tray.exe" "" "$INSTDIR\strata-tray.exe" 0 SW_SHOWNORMAL "" "Show the Strata server's state in the notification area"
  CreateShortcut "$SMPROGRAMS\${PRODUCT}\${PRODUCT} Logs.lnk" "${DATADIR}\logs"
  CreateShortcut "$SMPROGRAMS\${PRODUCT}\Uninstall ${PRODUCT}.lnk" "$INSTDIR\uninstall.exe"

  ${If} $TrayLogin == 1
    WriteRegStr HKLM "${RUNKEY}" "${RUNVALUE}" '"$INSTDIR\strata-tray.exe"'
  ${Else}
    DeleteRegValue HKLM "${RUNKEY}" "${RUNVALUE}"
  ${EndIf}

  ${If} $StrataRoot != ""
    WriteRegStr HKLM "${REGKEY}" "StrataRoot" "$StrataRoot"
  ${EndIf}
  StrCpy $1 "strata-setup.exe"
  Call WriteInstallEntries

  ; Register and start the service (strata-service's install/start contract).
  ${If} $StrataRoot != ""
    !insertmacro ServiceCmd 'install --strata-root "$StrataRoot"'
  ${Else}
    !insertmacro ServiceCmd "install"
  ${EndIf}
  ${If} $0 == 0
    !insertmacro ServiceCmd "start"
  ${EndIf}
  ${If} $0 != 0
    SetErrorLevel 3
    MessageBox MB_ICONEXCLAMATION|MB_OK "The ${PRODUCT} service could not be registered or started (strata-service exit code $0; the details are in this window).$\r$\n$\r$\nThe files are installed. Open an administrator command prompt and run:$\r$\n$\"$INSTDIR\strata-service.exe$\" install$\r$\nor run the ${PRODUCT} setup from the Start menu." /SD IDOK
  ${EndIf}
SectionEnd


; The lend role: this PC lends its GPU to the PC that runs Strata. Only the
; command line (which sets lending up and runs the lender service) and the
; relay (the agent the paired PC runs here over ssh); no Strata service, no
; tray, no setup. "strata-service lend" opens the ssh server, installs the
; agent for the signed-in user, registers the lender service
; (strata-lender) and makes the pairing code the Finish page shows.
Section "-Lend this PC's GPU" SecLend
  SetShellVarContext all
  SetOutPath "$INSTDIR"
  Call StopOld

  File "${BINDIR}/strata-service.exe"
  File "${BINDIR}/strata-vision-relay.exe"
  File "/oname=LICENSE.txt" "${LICENSE}"
  WriteUninstaller "$INSTDIR\uninstall.exe"
  Call DataFolders

  ; What running Strata here installed before goes (this PC lends now).
  Delete "$INSTDIR\strata-tray.exe"
  Delete "$INSTDIR\strata-setup.exe"
  Delete "$INSTDIR\linux-amd64\strata-vision-relay"
  RMDir "$INSTDIR\linux-amd64"
  Delete "$INSTDIR\linux-arm64\strata-vision-relay"
  RMDir "$INSTDIR\linux-arm64"
  Delete "$SMPROGRAMS\${PRODUCT}\${PRODUCT} Setup.lnk"
  Delete "$SMPROGRAMS\${PRODUCT}\${PRODUCT} Tray.lnk"
  DeleteRegValue HKLM "${RUNKEY}" "${RUNVALUE}"
  DeleteRegValue HKLM "${REGKEY}" "StrataRoot"

  ; A code works once, for 10 minutes: a new one from the Start menu, as
  ; administrator (the shortcut's "run as administrator" flag, byte 0x15
  ; bit 0x20 of the .lnk: SLDF_RUNAS_USER).
  CreateDirectory "$SMPROGRAMS\${PRODUCT}"
  CreateShortcut "$SMPROGRAMS\${PRODUCT}\New pairing code.lnk" "$SYSDIR\cmd.exe" '/s /c ""$INSTDIR\strata-service.exe" lend code & pause"' "$INSTDIR\strata-service.exe" 0 SW_SHOWNORMAL "" "Show a new pairing code for the PC that runs Strata"
  ClearErrors
  FileOpen $0 "$SMPROGRAMS\${PRODUCT}\New pairing code.lnk" a
  ${IfNot} ${Errors}
    FileSeek $0 0x15 SET
    FileReadByte $0 $1
    IntOp $1 $1 | 0x20
    FileSeek $0 0x15 SET
    FileWriteByte $0 $1
    FileClose $0
  ${EndIf}
  CreateShortcut "$SMPROGRAMS\${PRODUCT}\${PRODUCT} Logs.lnk" "${DATADIR}\logs"
  CreateShortcut "$SMPROGRAMS\${PRODUCT}\Uninstall ${PRODUCT}.lnk" "$INSTDIR\uninstall.exe"

  StrCpy $1 "strata-service.exe"
  Call WriteInstallEntries

  ; Set lending up (the installer has the administrator rights it needs);
  ; the lender service it registers makes the code.
  StrCpy $LendCode ""
  !insertmacro ServiceCmd "lend"
  ${If} $0 == 0
    StrCpy $R8 "$PROFILE\AppData\Local\StrataCompanion\lending.json"
    StrCpy $R9 "code"
    Call ShownValue
    StrCpy $LendCode $R0
    StrCpy $R9 "name"
    Call ShownValue
    StrCpy $LendName $R0
    StrCpy $R9 "expires"
    Call ShownValue
    StrCpy $LendUntil $R0 5 11 ; 2026-11-29T14:05:00+01:00: this PC's time of day
  ${EndIf}
  ${If} $LendCode == ""
    SetErrorLevel 4
    StrCpy $FinishText "${PRODUCT} is installed, but this PC could not start lending its GPU (strata-service exit code $0).$\r$\n$\r$\nFix what the installer's details said, then run this installer again."
    MessageBox MB_ICONEXCLAMATION|MB_OK "This PC could not start lending its GPU (strata-service exit code $0; the details are in this window).$\r$\n$\r$\nFix what they say, then run this installer again." /SD IDOK
  ${Else}
    DetailPrint "Pairing code: $LendCode (works once, until $LendUntil)"
    StrCpy $FinishText "This PC lends its GPU as $LendName.$\r$\n$\r$\nOn the PC that runs Strata, open ${PRODUCT}'s setup, pick $LendName on its Second PC page and type this code. It works once, until $LendUntil. A new one: Start menu, ${PRODUCT}, New pairing code."
  ${EndIf}
SectionEnd

; ApplyRole runs the role's section only.
Function ApplyRole
  ${If} $Role == "lend"
    !insertmacro UnselectSection ${SecMain}
    !insertmacro SelectSection ${SecLend}
  ${Else}
    !insertmacro SelectSection ${SecMain}
    !insertmacro UnselectSection ${SecLend}
  ${EndIf}
FunctionEnd

; StopOld ends what the version installed before runs, so that its files
; can be replaced: the Strata service is stopped and unregistered by the old
; program (it knows how); the lender service is stopped (lend registers it
; again), or, when this PC now runs Strata, lending is undone; then the
; programs that hold files open are ended.
Function StopOld
  ${If} ${FileExists} "$INSTDIR\strata-service.exe"
    ${If} $PrevRole == "lend"
      ${If} $Role == "lend"
        DetailPrint "Stopping the lender service of the version installed before"
        nsExec::ExecToLog '"$SYSDIR\net.exe" stop strata-lender'
        Pop $0
      ${Else}
        DetailPrint "This PC runs Strata now: it stops lending its GPU"
        !insertmacro ServiceCmd "lend stop"
      ${EndIf}
    ${Else}
      DetailPrint "Stopping the ${PRODUCT} service of the version installed before"
      !insertmacro ServiceCmd "stop"
      !insertmacro ServiceCmd "uninstall"
    ${EndIf}
  ${EndIf}
  Call EndPrograms
FunctionEnd

; DataFolders makes the companion's own folders. The secrets folder is for
; administrators and the services (LocalSystem) only.
Function DataFolders
  CreateDirectory "${DATADIR}\logs"
  CreateDirectory "${DATADIR}\secrets"
  nsExec::Exec 'icacls "${DATADIR}\secrets" /inheritance:r /grant:r *S-1-5-18:(OI)(CI)F *S-1-5-32-544:(OI)(CI)F'
  Pop $0
  ${If} $0 != 0
    DetailPrint "Could not restrict the secrets folder to administrators (icacls exit code $0)"
  ${EndIf}
FunctionEnd

; WriteInstallEntries writes what Windows and a later install read: the
; companion's key (the role included) and the Add/Remove Programs entry,
; with the program in $1 as its icon.
Function WriteInstallEntries
  WriteRegStr HKLM "${REGKEY}" "InstallDir" "$INSTDIR"
  WriteRegStr HKLM "${REGKEY}" "Version" "${VERSION}"
  WriteRegStr HKLM "${REGKEY}" "Role" "$Role"

  WriteRegStr HKLM "${UNINSTKEY}" "DisplayName" "${PRODUCT}"
  WriteRegStr HKLM "${UNINSTKEY}" "DisplayVersion" "${VERSION}"
  WriteRegStr HKLM "${UNINSTKEY}" "Publisher" "${PUBLISHER}"
  WriteRegStr HKLM "${UNINSTKEY}" "URLInfoAbout" "${URL}"
  WriteRegStr HKLM "${UNINSTKEY}" "DisplayIcon" "$INSTDIR\$1,0"
  WriteRegStr HKLM "${UNINSTKEY}" "InstallLocation" "$INSTDIR"
  WriteRegStr HKLM "${UNINSTKEY}" "UninstallString" '"$INSTDIR\uninstall.exe"'
  WriteRegStr HKLM "${UNINSTKEY}" "QuietUninstallString" '"$INSTDIR\uninstall.exe" /S'
  WriteRegDWORD HKLM "${UNINSTKEY}" "NoModify" 1
  WriteRegDWORD HKLM "${UNINSTKEY}" "NoRepair" 1
  ${GetSize} "$INSTDIR" "/S=0K" $0 $1 $2
  IntFmt $0 "0x%08X" $0
  WriteRegDWORD HKLM "${UNINSTKEY}" "EstimatedSize" $0
FunctionEnd

; ShownValue: $R0 = the string field named $R9 of the lending view in the
; file $R8 (internal/lendshown, as the lender writes it: one field a line,
;   "name": "value",), "" when there is none.
Function ShownValue
  Push $0
  Push $1
  Push $2
  Push $3
  Push $4
  Push $5
  StrCpy $R0 ""
  StrCpy $2 '  "$R9": "'
  StrLen $3 $2
  ClearErrors
  FileOpen $0 $R8 r
  ${IfNot} ${Errors}
    ${Do}
      ClearErrors
      FileRead $0 $1
      ${If} ${Errors}
        ${Break}
      ${EndIf}
      StrCpy $4 $1 $3
      ${If} $4 == $2
        StrCpy $1 $1 "" $3
        StrCpy $5 0
        ${Do}
          StrCpy $4 $1 1 $5
          ${If} $4 == '"'
          ${OrIf} $4 == ""
            ${Break}
          ${EndIf}
          IntOp $5 $5 + 1
        ${Loop}
        StrCpy $R0 $1 $5
        ${Break}
      ${EndIf}
    ${Loop}
    FileClose $0
  ${EndIf}
  Pop $5
  Pop $4
  Pop $3
  Pop $2
  Pop $1
  Pop $0
FunctionEnd

; FinishPageShow: the lend role's Finish page shows the pairing code, large,
; where the "open setup" box would be (there is no setup on a lending PC).
Function FinishPageShow
  ${If} $Role == "lend"
    SendMessage $mui.FinishPage.Run ${BM_SETCHECK} ${BST_UNCHECKED} 0
    ShowWindow $mui.FinishPage.Run ${SW_HIDE}
    ${If} $LendCode != ""
      ${NSD_CreateLabel} 120u 122u 195u 24u "$LendCode"
      Pop $0
      SetCtlColors $0 "${MUI_TEXTCOLOR}" "${MUI_BGCOLOR}"
      CreateFont $CodeFont "$(^Font)" "20" "700"
      SendMessage $0 ${WM_SETFONT} $CodeFont 0
    ${EndIf}
  ${EndIf}
FunctionEnd

; Programs started from here must not inherit the installer's administrator
; rights: explorer.exe starts them as the signed-in user.
Function LaunchWizard
  ${If} $Role == "lend"
    Return ; no setup on a lending PC
  ${EndIf}
  Exec '"$WINDIR\explorer.exe" "$INSTDIR\strata-setup.exe"'
FunctionEnd

Function .onInstSuccess
  ${If} $TrayLogin == 1
  ${AndIf} $Role != "lend"
  ${AndIfNot} ${Silent}
    Exec '"$WINDIR\explorer.exe" "$INSTDIR\strata-tray.exe"'
  ${EndIf}
FunctionEnd

; ---- uninstall ----

Function un.onInit
  SetShellVarContext all
  ReadRegStr $Role HKLM "${REGKEY}" "Role"
  StrCpy $KeepSettings 1
  StrCpy $RestoreVision 0
  ${GetParameters} $R0
  ClearErrors
  ${GetOptions} $R0 "/KEEPSETTINGS=" $R1
  ${IfNot} ${Errors}
  ${AndIf} $R1 == 0
    StrCpy $KeepSettings 0
  ${EndIf}
  ClearErrors
  ${GetOptions} $R0 "/RESTOREVISION=" $R1
  ${IfNot} ${Errors}
  ${AndIf} $R1 == 1
    StrCpy $RestoreVision 1
  ${EndIf}
FunctionEnd

Function un.OptionsPageCreate
  !insertmacro MUI_HEADER_TEXT "What to keep" "${PRODUCT} is removed; choose what stays."
  nsDialogs::Create 1018
  Pop $Dialog
  ${If} $Dialog == error
    Abort
  ${EndIf}
  ${NSD_CreateCheckbox} 0 0 100% 12u "&Keep my ${PRODUCT} settings and keys (for a later reinstall)"
  Pop $KeepBox
  ${NSD_CreateLabel} 12u 13u 95% 20u "They are in ${DATADIR}: the second PC's address, its pinned host key and the companion's own ssh key."
  Pop $0
  ${If} $KeepSettings == 1
    ${NSD_Check} $KeepBox
  ${EndIf}
  ${If} $Role == "lend"
    ; A lending PC has no Strata to put back; lending is undone in any case.
    ${NSD_CreateLabel} 0 40u 100% 28u "This PC stops lending its GPU: the paired PCs can no longer read pictures here, and the ssh server goes back to how it was before."
    Pop $0
    nsDialogs::Show
    Return
  ${EndIf}
  ${NSD_CreateCheckbox} 0 40u 100% 12u "&Put back Strata's picture (vision) settings from before ${PRODUCT} changed them"
  Pop $RestoreBox
  ${NSD_CreateLabel} 12u 53u 95% 28u "Leave this off to keep Strata configured as it is now. Strata itself, its models and its other settings are never changed or removed."
  Pop $0
  ${If} $RestoreVision == 1
    ${NSD_Check} $RestoreBox
  ${EndIf}
  nsDialogs::Show
FunctionEnd

Function un.OptionsPageLeave
  ${NSD_GetState} $KeepBox $0
  ${If} $0 == ${BST_CHECKED}
    StrCpy $KeepSettings 1
  ${Else}
    StrCpy $KeepSettings 0
  ${EndIf}
  StrCpy $RestoreVision 0
  ${If} $Role != "lend"
    ${NSD_GetState} $RestoreBox $0
    ${If} $0 == ${BST_CHECKED}
      StrCpy $RestoreVision 1
    ${EndIf}
  ${EndIf}
FunctionEnd

Section "Uninstall"
  SetShellVarContext all

  ; A lending PC: lending undone first (the lender service gone, the paired
  ; PCs' keys out, the agent gone, the ssh server as it was), while
  ; strata-service.exe is still here to do it.
  ${If} $Role == "lend"
  ${AndIf} ${FileExists} "$INSTDIR\strata-service.exe"
    !insertmacro un.ServiceCmd "lend stop"
    ${If} $0 != 0
      MessageBox MB_ICONEXCLAMATION|MB_OKCANCEL "Lending could not be undone completely (exit code $0; the details are in this window): the paired PCs may still read pictures here.$\r$\n$\r$\nClick Cancel to keep ${PRODUCT} and try again later, or OK to remove it anyway." /SD IDOK IDOK +2
        Abort
      SetErrorLevel 3
    ${EndIf}
  ${EndIf}

  ${If} $RestoreVision == 1
  ${AndIf} ${FileExists} "$INSTDIR\strata-service.exe"
    !insertmacro un.ServiceCmd "vision restore --yes"
    ${If} $0 != 0
      MessageBox MB_ICONEXCLAMATION|MB_OK "Strata's earlier vision settings could not be put back (exit code $0). Strata keeps its current settings; the uninstall goes on." /SD IDOK
    ${EndIf}
  ${EndIf}

  ${If} ${FileExists} "$INSTDIR\strata-service.exe"
  ${AndIf} $Role != "lend"
    !insertmacro un.ServiceCmd "stop"
    !insertmacro un.ServiceCmd "uninstall"
    ${If} $0 != 0
      SetErrorLevel 3
      MessageBox MB_ICONEXCLAMATION|MB_OK "The ${PRODUCT} service could not be removed (exit code $0). After the uninstall, remove it from an administrator prompt with: sc.exe delete <the service name shown by services.msc>" /SD IDOK
    ${EndIf}
  ${EndIf}
  Call un.EndPrograms

  ; Only our own files: the install folder may have been chosen by hand.
  Delete "$INSTDIR\strata-service.exe"
  Delete "$INSTDIR\strata-vision-relay.exe"
  Delete "$INSTDIR\strata-tray.exe"
  Delete "$INSTDIR\strata-setup.exe"
  Delete "$INSTDIR\LICENSE.txt"
  Delete "$INSTDIR\uninstall.exe"
  Delete "$INSTDIR\linux-amd64\strata-vision-relay"
  RMDir "$INSTDIR\linux-amd64"
  Delete "$INSTDIR\linux-arm64\strata-vision-relay"
  RMDir "$INSTDIR\linux-arm64"
  RMDir "$INSTDIR"

  Delete "$SMPROGRAMS\${PRODUCT}\${PRODUCT} Setup.lnk"
  Delete "$SMPROGRAMS\${PRODUCT}\${PRODUCT} Tray.lnk"
  Delete "$SMPROGRAMS\${PRODUCT}\${PRODUCT} Logs.lnk"
  Delete "$SMPROGRAMS\${PRODUCT}\Uninstall ${PRODUCT}.lnk"
  Delete "$SMPROGRAMS\${PRODUCT}\New pairing code.lnk"
  RMDir "$SMPROGRAMS\${PRODUCT}"

  ; The login entry: ours (all users), and one the tray may have made for the
  ; user running this.
  DeleteRegValue HKLM "${RUNKEY}" "${RUNVALUE}"
  DeleteRegValue HKCU "${RUNKEY}" "${RUNVALUE}"
  DeleteRegValue HKCU "${RUNKEY}" "Strata Companion tray"
  DeleteRegValue HKCU "Software\Microsoft\Windows\CurrentVersion\Explorer\StartupApproved\Run" "${RUNVALUE}"
  DeleteRegKey HKLM "${UNINSTKEY}"
  DeleteRegKey HKLM "${REGKEY}"

  ; Logs and runtime state always go; settings and keys only when asked.
  RMDir /r "${DATADIR}\logs"
  RMDir /r "${DATADIR}\state"
  ${If} $KeepSettings == 0
    DetailPrint "Removing the ${PRODUCT} settings and keys"
    RMDir /r "${DATADIR}"
  ${Else}
    DetailPrint "Keeping the ${PRODUCT} settings and keys in ${DATADIR}"
  ${EndIf}
SectionEnd
